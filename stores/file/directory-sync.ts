import { closeSync, openSync } from "node:fs";
import { fsyncDescriptor } from "./descriptor-io.js";

/** The fsync of one directory in flight, and the one queued behind it. */
interface DirectorySyncState {
  running: Promise<void>;
  next: Promise<void> | undefined;
}

const inFlight = new Map<string, DirectorySyncState>();

/**
 * fsyncs a directory so the names created, renamed or removed in it before
 * the call survive power loss; best effort (some platforms refuse).
 *
 * Concurrent calls for one directory are coalesced: a call resolves after an
 * fsync that started after the call was made, and calls made while an fsync
 * is running share the single fsync queued behind it. Under many concurrent
 * commits a directory is therefore synced about once per fsync latency
 * rather than once per commit, with the same guarantee to every caller.
 * Never rejects.
 */
export function syncDirectory(dir: string): Promise<void> {
  const state = inFlight.get(dir);
  if (!state) {
    const running = fsyncDirectory(dir).finally(() => settle(dir, running));
    inFlight.set(dir, { running, next: undefined });
    return running;
  }
  if (!state.next) {
    const next: Promise<void> = state.running.then(() => fsyncDirectory(dir)).finally(() => settle(dir, next));
    state.next = next;
  }
  return state.next;
}

/** After `finished` settles: the queued fsync (if any) becomes the running one, or the directory is idle. */
function settle(dir: string, finished: Promise<void>): void {
  const state = inFlight.get(dir);
  if (!state) return;
  if (state.running === finished) {
    if (state.next) state.running = state.next;
    else inFlight.delete(dir);
    state.next = undefined;
  }
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
