import { readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead } from "../snapshot-store.js";
import { readHeadFileOfKey } from "./head-file.js";
import { CHUNKS_DIR, RECORDS_DIR, SESSIONS_DIR, sessionKeyOfFile, type StoreLayout } from "./store-layout.js";

/** How many files a scan or a delete reads or removes at once (bounds open file descriptors). */
const CONCURRENCY = 32;

/** Runs `fn` over `items` with at most `limit` calls in flight; resolves to the results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The names in a directory, [] when it does not exist. */
export async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/** A head read by {@link readAllHeads}, with its file's session key. */
export interface KeyedHead {
  key: string;
  head: SessionHead;
}

/**
 * Every session head of a store (or prefix) directory: reads the whole
 * `sessions/` directory listing and every head file in it (O(sessions) file
 * reads, {@link CONCURRENCY} at a time). Heads removed meanwhile are skipped.
 * A corrupt head file throws DATA_LOSS, or is skipped with `skipCorrupt`.
 */
export async function readAllHeads(layout: StoreLayout, options: { skipCorrupt?: boolean } = {}): Promise<KeyedHead[]> {
  const keys: string[] = [];
  for (const name of await namesIn(layout.sessionsDir)) {
    const key = sessionKeyOfFile(name, "head");
    if (key) keys.push(key);
  }
  const heads = await mapLimit(keys, CONCURRENCY, async (key) => {
    try {
      const head = await readHeadFileOfKey(layout.headPathOfKey(key), key);
      return head && { key, head };
    } catch (err) {
      if (options.skipCorrupt && err instanceof AgentError && err.status === "DATA_LOSS") return undefined;
      throw err;
    }
  });
  return heads.filter((h): h is KeyedHead => h !== undefined);
}

/** Keys of the sessions whose record index exists but whose head file does not (read without locks: re-check under the session lock). */
export async function indexKeysWithoutHead(layout: StoreLayout): Promise<string[]> {
  const names = new Set(await namesIn(layout.sessionsDir));
  const keys: string[] = [];
  for (const name of names) {
    const key = sessionKeyOfFile(name, "index");
    if (key && !names.has(`${key}.head.json`)) keys.push(key);
  }
  return keys;
}

/**
 * The store directories under `root` (the root and tenant prefix
 * directories, nested at most `maxDepth` below it): every directory holding a
 * `sessions/` directory. Unreadable directories are skipped.
 */
export async function findStoreDirectories(root: string, maxDepth = 8): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    if (entries.some((e) => e.isDirectory() && e.name === SESSIONS_DIR)) found.push(dir);
    if (depth <= 0) return;
    for (const entry of entries) {
      if (
        !entry.isDirectory() ||
        entry.name === SESSIONS_DIR ||
        entry.name === RECORDS_DIR ||
        entry.name === CHUNKS_DIR ||
        entry.name.startsWith(".")
      )
        continue;
      await walk(join(dir, entry.name), depth - 1);
    }
  };
  await walk(root, maxDepth);
  return found;
}

/** Removes a file; false when it did not exist. */
export async function unlinkIfExists(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}
