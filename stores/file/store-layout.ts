import { hash } from "node:crypto";
import { join, sep } from "node:path";

/** Name of the format marker file at the top of every store (or tenant prefix) directory. */
export const STORE_MARKER_FILE = "agentd-store.json";
/** Directory in which store format 2 kept one `<snapshotId>.json` per record (a tenant prefix is never named so). */
export const RECORDS_DIR = "records";
/** Directory (inside a store or prefix directory) holding the session logs and their lock files. */
export const SESSIONS_DIR = "sessions";
/** Directory (inside the store directory) holding the commit journal's segments (see `CommitJournal`). */
export const JOURNAL_DIR = "journal";
/** File (inside a store or prefix directory) mapping snapshot IDs to sessions (see `SnapshotMap`). */
export const SNAPSHOT_MAP_FILE = "snapshots.map";
/** Directory (inside a store or prefix directory) holding the chunk logs of detached work, one subdirectory per session. */
export const CHUNKS_DIR = "chunks";
/** Suffix of a chunk log file (one JSON line per chunk). */
export const CHUNK_LOG_SUFFIX = ".jsonl";
/** Suffix of a chunk log's keep-until file (empty; its mtime is the keep-until time). */
export const CHUNK_KEEP_SUFFIX = ".keep";

/**
 * The names the layout uses inside a store directory, lower-cased. A tenant
 * path prefix segment equal to one of them (case-insensitively) is escaped by
 * `sanitizePathPrefix`, so a tenant directory never lands on the layout.
 */
export const LAYOUT_NAMES: ReadonlySet<string> = new Set([
  STORE_MARKER_FILE,
  RECORDS_DIR,
  SESSIONS_DIR,
  CHUNKS_DIR,
  SNAPSHOT_MAP_FILE,
  JOURNAL_DIR,
]);

/**
 * The file-name key of a session: 40 hex digits of SHA-256 of its ID (session
 * IDs are arbitrary strings; every head in the log also holds the ID, so a
 * reader can tell a collision from its own session).
 */
export function sessionKey(sessionId: string): string {
  return hash("sha256", sessionId, "hex").slice(0, 40);
}

/**
 * Where everything of one store (or tenant prefix) directory lives:
 * - `agentd-store.json` — the format marker (`{"format":3}`);
 * - `sessions/<key>.log` — the session log (`SessionLogView`): each commit
 *   and record update appends its record lines and the session's head;
 *   `sessions/<key>.lock` — its lock (`SessionLocks`);
 * - `snapshots.map` — snapshot ID → session key (`SnapshotMap`);
 * - `journal/<boot>-<pid>-<ms>-<random>.jnl` (the store directory only, not a
 *   tenant prefix directory) — commit journal segments (`CommitJournal`);
 * - `chunks/<key>/<snapshotId>.jsonl` — the chunk log of a detached
 *   invocation (one JSON line per chunk), `chunks/<key>/<snapshotId>.keep` —
 *   its keep-until time (the empty file's mtime).
 * Temporary files start with a dot, so they never look like logs.
 * Callers pass only validated snapshot IDs (they become file names).
 */
export class StoreLayout {
  readonly markerPath: string;
  readonly sessionsDir: string;
  readonly snapshotMapPath: string;
  readonly chunksDir: string;

  /** `base` is the absolute store or prefix directory. */
  constructor(readonly base: string) {
    this.markerPath = join(base, STORE_MARKER_FILE);
    this.sessionsDir = join(base, SESSIONS_DIR);
    this.snapshotMapPath = join(base, SNAPSHOT_MAP_FILE);
    this.chunksDir = join(base, CHUNKS_DIR);
  }

  /** The directory of the chunk logs of the session whose {@link sessionKey} is `key`. */
  chunkDirOfKey(key: string): string {
    return join(this.chunksDir, key);
  }

  /** The chunk log of `snapshotId` in `sessionId`. */
  chunkLogPath(sessionId: string, snapshotId: string): string {
    return join(this.chunkDirOfKey(sessionKey(sessionId)), `${snapshotId}${CHUNK_LOG_SUFFIX}`);
  }

  /** The keep-until file of the chunk log of `snapshotId` in `sessionId`. */
  chunkKeepPath(sessionId: string, snapshotId: string): string {
    return join(this.chunkDirOfKey(sessionKey(sessionId)), `${snapshotId}${CHUNK_KEEP_SUFFIX}`);
  }

  /** The log of the session whose {@link sessionKey} is `key` (a key is a plain file name: no join needed). */
  logPathOfKey(key: string): string {
    return `${this.sessionsDir}${sep}${key}${LOG_SUFFIX}`;
  }

  /** The lock of the session whose {@link sessionKey} is `key`. */
  lockPathOfKey(key: string): string {
    return `${this.sessionsDir}${sep}${key}.lock`;
  }
}

const LOG_SUFFIX = ".log";
const KEY = /^[0-9a-f]{40}$/;

/** True when `name` is a session key (a directory name in `chunks/`). */
export function isSessionKey(name: string): boolean {
  return KEY.test(name);
}

/** The session key of a session log's file name in `sessions/` (`<key>.log`), or undefined for any other name. */
export function sessionKeyOfLog(name: string): string | undefined {
  if (!name.endsWith(LOG_SUFFIX)) return undefined;
  const key = name.slice(0, -LOG_SUFFIX.length);
  return KEY.test(key) ? key : undefined;
}
