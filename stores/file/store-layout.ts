import { createHash } from "node:crypto";
import { join } from "node:path";

/** Name of the format marker file at the top of every store (or tenant prefix) directory. */
export const STORE_MARKER_FILE = "agentd-store.json";
/** Directory (inside a store or prefix directory) holding one `<snapshotId>.json` per record. */
export const RECORDS_DIR = "records";
/** Directory (inside a store or prefix directory) holding the session heads and indexes. */
export const SESSIONS_DIR = "sessions";
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
export const LAYOUT_NAMES: ReadonlySet<string> = new Set([STORE_MARKER_FILE, RECORDS_DIR, SESSIONS_DIR, CHUNKS_DIR]);

/**
 * The file-name key of a session: 40 hex digits of SHA-256 of its ID (session
 * IDs are arbitrary strings; the head file also stores the ID, so a reader can
 * tell a collision from its own session).
 */
export function sessionKey(sessionId: string): string {
  return createHash("sha256").update(sessionId, "utf8").digest("hex").slice(0, 40);
}

/**
 * Where everything of one store (or tenant prefix) directory lives:
 * - `agentd-store.json` — the format marker (`{"format":2}`);
 * - `records/<snapshotId>.json` — one record file each (`records/.<id>.lock`: its update lock);
 * - `sessions/<key>.head.json` — the session head, `sessions/<key>.idx` — the
 *   session's record index, `sessions/<key>.lock` — its commit lock;
 * - `chunks/<key>/<snapshotId>.jsonl` — the chunk log of a detached
 *   invocation (one JSON line per chunk), `chunks/<key>/<snapshotId>.keep` —
 *   its keep-until time (the empty file's mtime).
 * Temporary files start with a dot, so they never look like records or heads.
 * Callers pass only validated snapshot IDs (they are file names).
 */
export class StoreLayout {
  /** `base` is the absolute store or prefix directory. */
  constructor(readonly base: string) {}

  get markerPath(): string {
    return join(this.base, STORE_MARKER_FILE);
  }

  get recordsDir(): string {
    return join(this.base, RECORDS_DIR);
  }

  get sessionsDir(): string {
    return join(this.base, SESSIONS_DIR);
  }

  recordPath(snapshotId: string): string {
    return join(this.recordsDir, `${snapshotId}.json`);
  }

  recordLockPath(snapshotId: string): string {
    return join(this.recordsDir, `.${snapshotId}.lock`);
  }

  get chunksDir(): string {
    return join(this.base, CHUNKS_DIR);
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

  headPath(sessionId: string): string {
    return this.headPathOfKey(sessionKey(sessionId));
  }

  headLockPath(sessionId: string): string {
    return this.headLockPathOfKey(sessionKey(sessionId));
  }

  indexPath(sessionId: string): string {
    return this.indexPathOfKey(sessionKey(sessionId));
  }

  /** The head file of the session whose {@link sessionKey} is `key`. */
  headPathOfKey(key: string): string {
    return join(this.sessionsDir, `${key}${HEAD_SUFFIX}`);
  }

  /** The commit lock of the session whose {@link sessionKey} is `key`. */
  headLockPathOfKey(key: string): string {
    return join(this.sessionsDir, `${key}.lock`);
  }

  /** The record index of the session whose {@link sessionKey} is `key`. */
  indexPathOfKey(key: string): string {
    return join(this.sessionsDir, `${key}${INDEX_SUFFIX}`);
  }
}

const HEAD_SUFFIX = ".head.json";
const INDEX_SUFFIX = ".idx";
const KEY = /^[0-9a-f]{40}$/;

/** True when `name` is a session key (a directory name in `chunks/`). */
export function isSessionKey(name: string): boolean {
  return KEY.test(name);
}

/** The session key of a file name in `sessions/` (`<key>.head.json` or `<key>.idx`, per `kind`), or undefined for any other name. */
export function sessionKeyOfFile(name: string, kind: "head" | "index"): string | undefined {
  const suffix = kind === "head" ? HEAD_SUFFIX : INDEX_SUFFIX;
  if (!name.endsWith(suffix)) return undefined;
  const key = name.slice(0, -suffix.length);
  return KEY.test(key) ? key : undefined;
}
