import { readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { removeIfAbandoned } from "./file-lock.js";
import { CHUNKS_DIR, RECORDS_DIR, SESSIONS_DIR, STORE_MARKER_FILE } from "./store-layout.js";

/** Tuning of {@link sweepDebris}. */
export interface DebrisSweepOptions {
  /** A temporary file (`.<name>.<hex>.tmp`) older than this was left by a writer that died. Default 60 s. */
  tmpMaxAgeMs?: number;
  /** How deep tenant prefix directories nest below the store directory. Default 8. */
  maxDepth?: number;
}

/** What one sweep removed. */
export interface DebrisSweepResult {
  tmpFiles: number;
  lockFiles: number;
}

const TMP_FILE = /^\..+\.[0-9a-f]+\.tmp$/;
const LOCK_FILE = /\.lock(\.want)?$/;
const STALE_ASIDE = /\.lock(\.want)?\.stale-[0-9a-f]+$/;

/**
 * Removes what crashed writers leave in a file store (or tenant prefix)
 * directory tree: temporary files of interrupted atomic writes (and of
 * chunk logs' keep-until files) older than `tmpMaxAgeMs`, lock and lock-wait files (`*.lock`, `*.lock.want`) whose
 * holder process is gone (or that stayed unreadable; the same check, and the
 * same race-free rename-aside, lock acquirers use), and set-aside lock copies
 * of an interrupted steal older than `tmpMaxAgeMs`. Files of live processes
 * stay. Best effort: a file that vanishes or cannot be removed is skipped.
 */
export async function sweepDebris(root: string, options: DebrisSweepOptions = {}): Promise<DebrisSweepResult> {
  const result: DebrisSweepResult = { tmpFiles: 0, lockFiles: 0 };
  const tmpMaxAgeMs = options.tmpMaxAgeMs ?? 60_000;
  await sweepDir(root, options.maxDepth ?? 8, tmpMaxAgeMs, result);
  return result;
}

async function sweepDir(dir: string, depth: number, tmpMaxAgeMs: number, result: DebrisSweepResult): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  const now = Date.now();
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      // records/ and sessions/ hold the debris, chunks/ one level down (chunks/<session key>/: temporary
      // keep-until files); any other directory is a tenant prefix directory.
      if (entry.name === RECORDS_DIR || entry.name === SESSIONS_DIR) await sweepDir(path, 0, tmpMaxAgeMs, result);
      else if (entry.name === CHUNKS_DIR) await sweepDir(path, 1, tmpMaxAgeMs, result);
      else if (depth > 0) await sweepDir(path, depth - 1, tmpMaxAgeMs, result);
      continue;
    }
    if (!entry.isFile() || entry.name === STORE_MARKER_FILE) continue;
    try {
      if (TMP_FILE.test(entry.name) || STALE_ASIDE.test(entry.name)) {
        const info = await stat(path);
        if (now - info.mtimeMs > tmpMaxAgeMs) {
          await unlink(path);
          result.tmpFiles++;
        }
      } else if (LOCK_FILE.test(entry.name)) {
        if (await removeIfAbandoned(path)) result.lockFiles++;
      }
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
}
