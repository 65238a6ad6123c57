import { closeSync, openSync } from "node:fs";
import { CoalescedSync } from "./coalesced-sync.js";
import { fsyncDescriptor } from "./descriptor-io.js";

const syncs = new Map<string, CoalescedSync>();

/**
 * fsyncs a directory so the names created, renamed or removed in it before
 * the call survive power loss; best effort (some platforms refuse).
 *
 * Concurrent calls for one directory are coalesced (see {@link CoalescedSync}):
 * a call resolves after an fsync that started after the call was made, and
 * calls made while an fsync is running share the single fsync queued behind
 * it. Never rejects.
 */
export function syncDirectory(dir: string): Promise<void> {
  let sync = syncs.get(dir);
  if (!sync) {
    sync = new CoalescedSync(() => fsyncDirectory(dir));
    syncs.set(dir, sync);
  }
  const owner = sync;
  const done = owner.request();
  void done.finally(() => {
    if (!owner.busy && syncs.get(dir) === owner) syncs.delete(dir);
  });
  return done;
}

async function fsyncDirectory(dir: string): Promise<void> {
  try {
    const fd = openSync(dir, "r");
    try {
      await fsyncDescriptor(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // not supported here (e.g. Windows); the file itself was synced
  }
}
