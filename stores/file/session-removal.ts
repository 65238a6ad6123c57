import { rm, stat } from "node:fs/promises";
import { AgentError } from "../../src/errors/agent-error.js";
import { isExpired } from "../session-query.js";
import type { ExpireHook, SessionHead } from "../snapshot-store.js";
import { findStoreDirectories, readAllHeads } from "./session-files.js";
import type { SessionLogs } from "./session-logs.js";
import { ensureStoreFormat } from "./store-format.js";
import { StoreLayout } from "./store-layout.js";

/**
 * Removes the session whose key is `key` from `layout` when `shouldRemove`
 * accepts its current head (undefined when its log holds none; `garbled`
 * when the log cannot be read), holding the session's locks: its log first
 * (the session is gone for every reader from then on), then its chunk log
 * directory; the lock goes with the log. True when anything was removed.
 */
export async function removeSession(
  logs: SessionLogs,
  layout: StoreLayout,
  key: string,
  shouldRemove: (head: SessionHead | undefined, garbled: boolean) => boolean,
): Promise<boolean> {
  return logs.exclusive(layout, key, async () => {
    let head: SessionHead | undefined;
    let garbled = false;
    try {
      head = logs.view(layout.logPathOfKey(key))?.head;
    } catch (err) {
      if (!(err instanceof AgentError && err.status === "DATA_LOSS")) throw err;
      garbled = true;
    }
    if (!shouldRemove(head, garbled)) return false;
    let removed = await logs.removeLog(layout, key);
    if (await removeDirectoryIfExists(layout.chunkDirOfKey(key))) removed = true;
    return removed;
  });
}

/** Removes a directory and everything in it; false when it did not exist. */
async function removeDirectoryIfExists(dir: string): Promise<boolean> {
  try {
    await stat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
  await rm(dir, { recursive: true, force: true });
  return true;
}

/** The layouts of the store directory and of every tenant prefix directory below it (directories of this store format only). */
export async function tenantLayouts(root: string): Promise<StoreLayout[]> {
  const layouts: StoreLayout[] = [];
  for (const dir of await findStoreDirectories(root)) {
    try {
      if (ensureStoreFormat(dir, false)) layouts.push(new StoreLayout(dir));
    } catch {
      // another format: not ours to sweep
    }
  }
  return layouts;
}

/**
 * Deletes every session of `layout` whose expiresAt <= now, each re-checked
 * under its lock (a session written meanwhile stays), after `beforeExpire`
 * saw its head. Resolves to how many were deleted.
 */
export async function sweepExpiredSessions(
  logs: SessionLogs,
  layout: StoreLayout,
  now: number,
  beforeExpire?: ExpireHook,
): Promise<number> {
  let removed = 0;
  for (const { key, head } of await readAllHeads(layout, logs, { skipCorrupt: true })) {
    if (!isExpired(head, now)) continue;
    if (beforeExpire) await beforeExpire(head);
    if (await removeSession(logs, layout, key, (h) => h !== undefined && isExpired(h, now))) removed++;
  }
  return removed;
}
