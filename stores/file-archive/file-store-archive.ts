import { hash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { CopySource } from "../copy/copy-source.js";
import type { RecordPage, SessionHead, SnapshotPageRequest, SnapshotRecord } from "../snapshot-store.js";
import { headsAfter } from "../head-scan.js";
import { compareNewestFirst, pageOf } from "../snapshot-order.js";
import {
  pageOfWebhookEvents,
  type WebhookEvent,
  type WebhookEventPage,
  type WebhookEventQuery,
} from "../webhook-outbox.js";
import { applyJournal, readDeadJournals, type DeadJournal, type JournalChange } from "./archived-journal.js";
import { readArchivedLog } from "./archived-log.js";
import { format2Records, format2Sessions, type Format2Session } from "./format-2-directory.js";

/** The format marker at the top of a file store (and of each tenant prefix directory). */
const MARKER = "agentd-store.json";
/** Directories of a store's layout, never a tenant prefix directory. */
const LAYOUT_DIRS: ReadonlySet<string> = new Set(["sessions", "records", "chunks", "journal", "webhooks"]);
const EVENT_FILE = /^msg_[\w-]{1,200}\.json$/;
const LOG = /^([0-9a-f]{40})\.log$/;

/** Where one session lies in the archive. */
type ArchivedSession =
  { format: 3; path: string; changes: readonly JournalChange[] } | { format: 2; dir: string; session: Format2Session };

/** The format a directory's marker names; undefined without a marker. */
function markerFormat(dir: string): unknown {
  let text: string;
  try {
    text = readFileSync(join(dir, MARKER), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new AgentError("FAILED_PRECONDITION", `${join(dir, MARKER)} cannot be read: ${(err as Error).message}`);
  }
  try {
    return (JSON.parse(text) as { format?: unknown }).format;
  } catch {
    return "unreadable";
  }
}

/** The store directory and every tenant prefix directory below it (at most 8 deep): each holds a `sessions/` directory. */
function storeDirectories(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    const entries = readdirSync(dir, { withFileTypes: true });
    if (dir === root || entries.some((e) => e.isDirectory() && e.name === "sessions")) found.push(dir);
    if (depth === 0) return;
    for (const entry of entries) {
      if (entry.isDirectory() && !LAYOUT_DIRS.has(entry.name) && !entry.name.startsWith("."))
        walk(join(dir, entry.name), depth - 1);
    }
  };
  walk(root, 8);
  return found;
}

/** The names in a directory, [] when it does not exist. */
function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/** The pid a session lock file (`sessions/<key>.lock`: `{"pid":…,"token":…}`) names, if any. */
function lockPid(path: string): number | undefined {
  try {
    const pid = (JSON.parse(readFileSync(path, "utf8")) as { pid?: unknown }).pid;
    return typeof pid === "number" ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The retired file store (store formats 3 and 2) read as a source for
 * `agentd copy-store file:<dir> …`, without writing a byte to it: every
 * session of the store directory and of each tenant prefix directory below
 * it, with every record's newest version, and the webhook outbox's events.
 *
 * What a crash left is read as the file store read it once it had recovered:
 * a batch torn off the end of a session log is not there, and the batches a
 * dead process had recorded in its commit journal (`journal/`) while holding
 * a session's lock, but had not written to the session's log, are read as
 * written. Opening fails with NOT_FOUND when `dir` holds no file store (no
 * `agentd-store.json`), FAILED_PRECONDITION when a directory is of another
 * format, a process of this boot still writes the store, or two directories
 * hold the same session ID; reading a garbled log fails with DATA_LOSS naming
 * it. Heads are kept in memory (O(sessions)); records are read per session.
 */
export class FileStoreArchive implements CopySource {
  private constructor(
    private readonly root: string,
    private readonly sessions: ReadonlyMap<string, ArchivedSession>,
    private readonly heads: readonly SessionHead[],
  ) {}

  /** Reads the heads of every session of the file store in `dir` (see the class). */
  static open(dir: string): FileStoreArchive {
    const root = resolve(dir);
    const rootFormat = markerFormat(root);
    if (rootFormat === undefined)
      throw new AgentError("NOT_FOUND", `${root} holds no agentd file store (no ${MARKER})`);
    const journals = readDeadJournals(join(root, "journal"));
    const sessions = new Map<string, ArchivedSession>();
    const heads: SessionHead[] = [];
    const add = (head: SessionHead, where: ArchivedSession, dir: string): void => {
      if (sessions.has(head.sessionId)) {
        throw new AgentError(
          "FAILED_PRECONDITION",
          `session ${head.sessionId} is held twice in the file store ${root} (again in ${dir}); remove one of them first`,
        );
      }
      sessions.set(head.sessionId, where);
      heads.push(head);
    };
    for (const dir of storeDirectories(root)) {
      const format = markerFormat(dir) ?? rootFormat;
      if (format === 3) {
        for (const { head, path, changes } of format3Heads(root, dir, journals))
          add(head, { format: 3, path, changes }, dir);
      } else if (format === 2) {
        for (const session of format2Sessions(dir)) add(session.head, { format: 2, dir, session }, dir);
      } else {
        throw new AgentError(
          "FAILED_PRECONDITION",
          `${dir} is not a file store agentd can read (its marker says ${JSON.stringify(format)}; formats 2 and 3 are read)`,
        );
      }
    }
    return new FileStoreArchive(root, sessions, heads);
  }

  /** Up to `limit` heads (every owner and agent) whose session ID sorts after `afterSessionId`, ascending; INVALID_ARGUMENT for a limit < 1. */
  async scanHeads(afterSessionId: string | undefined, limit: number): Promise<SessionHead[]> {
    return headsAfter(this.heads, afterSessionId, limit);
  }

  /** A page of the session's records (with state), newest first; an unknown session has none. */
  async listRecords(sessionId: string, page?: SnapshotPageRequest): Promise<RecordPage> {
    const where = this.sessions.get(sessionId);
    if (!where) return { records: [] };
    const records = (
      where.format === 3 ? format3Records(where, sessionId) : format2Records(where.dir, where.session)
    ).sort(compareNewestFirst);
    const { items, nextPageToken } = pageOf(records, page);
    return nextPageToken ? { records: items, nextPageToken } : { records: items };
  }

  /** The webhook outbox's events (`webhooks/msg_*.json`), listed as every store lists them. */
  webhookOutbox(): { list(query: WebhookEventQuery): Promise<WebhookEventPage> } {
    const dir = join(this.root, "webhooks");
    return {
      list: async (query) => {
        const events = namesIn(dir)
          .filter((name) => EVENT_FILE.test(name))
          .map((name) => {
            try {
              return JSON.parse(readFileSync(join(dir, name), "utf8")) as WebhookEvent;
            } catch (err) {
              throw new AgentError(
                "DATA_LOSS",
                `webhook event file ${join(dir, name)} cannot be read: ${(err as Error).message}`,
              );
            }
          });
        return pageOfWebhookEvents(events, query);
      },
    };
  }

  /** Holds nothing open: resolves at once. */
  async close(): Promise<void> {}
}

/** The 40-hex-digit key a session's files are named by (SHA-256 of its ID). */
function sessionKey(sessionId: string): string {
  return hash("sha256", sessionId, "hex").slice(0, 40);
}

/** A format-3 session log's bytes with the dead journal changes that apply to it; undefined when no log is left. */
function logBytes(path: string, changes: readonly JournalChange[]): Buffer | undefined {
  let data: Buffer | undefined;
  try {
    data = readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  return changes.length > 0 ? applyJournal(path, data, changes) : data;
}

/**
 * The heads of a format-3 directory's sessions, each with its log and the
 * journal changes to apply to it: those of the dead process whose pid its lock
 * file still names (a writer released the lock only once its log was durable).
 */
function format3Heads(
  root: string,
  dir: string,
  journals: readonly DeadJournal[],
): { head: SessionHead; path: string; changes: readonly JournalChange[] }[] {
  const sessionsDir = join(dir, "sessions");
  const keys = new Set(namesIn(sessionsDir).flatMap((name) => LOG.exec(name)?.[1] ?? []));
  const prefix = `${relative(root, sessionsDir)}/`;
  for (const journal of journals) {
    for (const log of journal.byLog.keys()) {
      const key = log.startsWith(prefix) ? LOG.exec(log.slice(prefix.length))?.[1] : undefined;
      if (key) keys.add(key);
    }
  }
  const found = [];
  for (const key of [...keys].sort()) {
    const path = join(sessionsDir, `${key}.log`);
    const pid = lockPid(join(sessionsDir, `${key}.lock`));
    const changes = journals.find((j) => j.pid === pid)?.byLog.get(relative(root, path)) ?? [];
    const data = logBytes(path, changes);
    const head = data && readArchivedLog(path, data).head;
    if (!head) continue;
    if (sessionKey(head.sessionId) !== key) {
      throw new AgentError(
        "DATA_LOSS",
        `session log ${path} holds session ${JSON.stringify(head.sessionId)}, whose key is not ${key}; restore it from a backup`,
      );
    }
    found.push({ head, path, changes });
  }
  return found;
}

/** Every record of a format-3 session (the newest line of each), parsed. */
function format3Records(
  where: { path: string; changes: readonly JournalChange[] },
  sessionId: string,
): SnapshotRecord[] {
  const data = logBytes(where.path, where.changes);
  if (!data) return [];
  const records: SnapshotRecord[] = [];
  for (const [snapshotId, payload] of readArchivedLog(where.path, data).records) {
    let record: SnapshotRecord | undefined;
    try {
      record = JSON.parse(payload.toString("utf8")) as SnapshotRecord;
    } catch {
      record = undefined;
    }
    if (record?.snapshotId !== snapshotId) {
      throw new AgentError(
        "DATA_LOSS",
        `session log ${where.path} holds a record line for ${snapshotId} that is not that record; restore it from a backup`,
      );
    }
    if (record.sessionId === sessionId) records.push(record);
  }
  return records;
}
