import { rm, stat } from "node:fs/promises";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead } from "../snapshot-store.js";
import { syncDirectory } from "./directory-sync.js";
import { acquireFileLock } from "./file-lock.js";
import { readHeadFileOfKey } from "./head-file.js";
import { readRecordFile } from "./record-file.js";
import { readIndexEntries } from "./session-index.js";
import { findStoreDirectories, indexKeysWithoutHead, mapLimit, readAllHeads, unlinkIfExists } from "./session-files.js";
import { ensureStoreFormat } from "./store-format.js";
import { sessionKey, StoreLayout } from "./store-layout.js";
import { isExpired } from "../session-query.js";

/** What removing a session's files needs of the file store. */
export interface RemovalContext {
  /** Runs `fn` holding the in-process mutex `key` and the cross-process lock file `lockPath`. */
  locked<T>(key: string, lockPath: string, fn: () => Promise<T>): Promise<T>;
  /** fsync the directories after removing files. */
  fsync: boolean;
  /** Age after which a lock file of a live process counts as abandoned. */
  lockStaleMs?: number;
}

/** The in-process mutex key of a session's commit lock. */
export function sessionMutexKey(layout: StoreLayout, sessionId: string): string {
  return `${layout.base}\0s\0${sessionId}`;
}

/**
 * Removes the files of the session whose key is `key` (the caller holds its
 * lock) when `shouldRemove` accepts its current head (undefined when there
 * is none; `corrupt` when the head file is unreadable): head first, then the
 * records its index lists (those of this session), then its chunk log
 * directory, then the index (so an interrupted removal leaves an index
 * without a head, which `sweepExpired` finishes). True when anything was
 * removed.
 */
export async function removeSessionFiles(
  c: RemovalContext,
  layout: StoreLayout,
  key: string,
  shouldRemove: (head: SessionHead | undefined, corrupt: boolean) => boolean,
): Promise<boolean> {
  const headPath = layout.headPathOfKey(key);
  let head: SessionHead | undefined;
  let corrupt = false;
  try {
    head = await readHeadFileOfKey(headPath, key);
  } catch (err) {
    if (!(err instanceof AgentError && err.status === "DATA_LOSS")) throw err;
    corrupt = true;
  }
  if (!shouldRemove(head, corrupt)) return false;
  let removed = await unlinkIfExists(headPath);
  if (removed && c.fsync) await syncDirectory(layout.sessionsDir);
  const entries = await readIndexEntries(layout.indexPathOfKey(key));
  const gone = await mapLimit(entries, 16, (e) => removeRecordOf(c, layout, e.snapshotId, key));
  if (gone.some(Boolean)) {
    removed = true;
    if (c.fsync) await syncDirectory(layout.recordsDir);
  }
  if (await removeDirectoryIfExists(layout.chunkDirOfKey(key))) removed = true;
  if (await unlinkIfExists(layout.indexPathOfKey(key))) removed = true;
  return removed;
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

/** Removes a record file under its locks when it belongs to the session with key `key` (or is corrupt); true when removed. */
function removeRecordOf(c: RemovalContext, layout: StoreLayout, snapshotId: string, key: string): Promise<boolean> {
  return c.locked(`${layout.base}\0r\0${snapshotId}`, layout.recordLockPath(snapshotId), async () => {
    const path = layout.recordPath(snapshotId);
    try {
      const file = await readRecordFile(path, snapshotId);
      if (!file || sessionKey(file.record.sessionId) !== key) return false;
    } catch (err) {
      if (!(err instanceof AgentError && err.status === "DATA_LOSS")) throw err;
      // unreadable and listed by this session: it goes with it
    }
    return unlinkIfExists(path);
  });
}

/** The layouts of the store directory and of every tenant prefix directory below it (format-2 directories only). */
export async function tenantLayouts(root: string): Promise<StoreLayout[]> {
  const layouts: StoreLayout[] = [];
  for (const dir of await findStoreDirectories(root)) {
    try {
      if (ensureStoreFormat(dir, false)) layouts.push(new StoreLayout(dir));
    } catch {
      // not a format-2 directory: not ours to sweep
    }
  }
  return layouts;
}

/**
 * Deletes every session of `layout` whose expiresAt <= now, each re-checked
 * under its lock (a session written meanwhile stays), and finishes deletes a
 * crash interrupted (an index without a head, checked under the session
 * lock). Resolves to how many expired sessions were deleted.
 */
export async function sweepExpiredSessions(c: RemovalContext, layout: StoreLayout, now: number): Promise<number> {
  let removed = 0;
  for (const { key, head } of await readAllHeads(layout, { skipCorrupt: true })) {
    if (!isExpired(head, now)) continue;
    const expired = (h: SessionHead | undefined) => h !== undefined && isExpired(h, now);
    const lockPath = layout.headLockPathOfKey(key);
    if (
      await c.locked(sessionMutexKey(layout, head.sessionId), lockPath, () =>
        removeSessionFiles(c, layout, key, expired),
      )
    )
      removed++;
  }
  for (const key of await indexKeysWithoutHead(layout)) {
    // Only the file lock (the session ID is unknown): it excludes commits of every process, this one included.
    const release = await acquireFileLock(layout.headLockPathOfKey(key), { staleMs: c.lockStaleMs });
    try {
      await removeSessionFiles(c, layout, key, (h, corrupt) => h === undefined && !corrupt);
    } finally {
      await release();
    }
  }
  return removed;
}
