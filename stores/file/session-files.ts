import { readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead } from "../snapshot-store.js";
import type { SessionLogs } from "./session-logs.js";
import {
  CHUNKS_DIR,
  JOURNAL_DIR,
  RECORDS_DIR,
  SESSIONS_DIR,
  sessionKey,
  sessionKeyOfLog,
  type StoreLayout,
} from "./store-layout.js";

/** The names in a directory, [] when it does not exist. */
export async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/** A head read by {@link readAllHeads}, with its log's session key. */
export interface KeyedHead {
  key: string;
  head: SessionHead;
}

/** How many heads {@link readAllHeads} reads before it lets the event loop run. */
const HEADS_PER_TURN = 64;

/**
 * Every session head of a store (or prefix) directory: reads the
 * `sessions/` directory listing and the end of every session log in it
 * (O(sessions) reads; see `SessionLogs.readHead`). Logs removed meanwhile,
 * and logs without a complete batch, are skipped. A garbled head or a log
 * holding another session's head throws DATA_LOSS, or is skipped with
 * `skipCorrupt`.
 */
export async function readAllHeads(
  layout: StoreLayout,
  logs: SessionLogs,
  options: { skipCorrupt?: boolean } = {},
): Promise<KeyedHead[]> {
  const heads: KeyedHead[] = [];
  let read = 0;
  for (const name of await namesIn(layout.sessionsDir)) {
    const key = sessionKeyOfLog(name);
    if (!key) continue;
    if (++read % HEADS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    try {
      const head = logs.readHead(layout.logPathOfKey(key));
      if (head) heads.push({ key, head: checkHeadKey(head, key, layout.logPathOfKey(key)) });
    } catch (err) {
      if (options.skipCorrupt && err instanceof AgentError && err.status === "DATA_LOSS") continue;
      throw err;
    }
  }
  return heads;
}

/** `head` when it belongs to the session whose key is `key`; DATA_LOSS when the log at `path` holds another session's head. */
export function checkHeadKey(head: SessionHead, key: string, path: string): SessionHead {
  if (sessionKey(head.sessionId) === key) return head;
  throw new AgentError(
    "DATA_LOSS",
    `session log ${path} holds session ${JSON.stringify(head.sessionId)}, whose key is not ${key}; restore it from a backup`,
  );
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
        entry.name === JOURNAL_DIR ||
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
