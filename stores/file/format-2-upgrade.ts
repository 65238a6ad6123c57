import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead, SnapshotRecord } from "../snapshot-store.js";
import { datasyncDescriptor, writeAllSync } from "./descriptor-io.js";
import { syncDirectory } from "./directory-sync.js";
import { readOwner } from "./file-lock.js";
import { processAlive } from "./process-liveness.js";
import { encodeHeadLine, encodeRecordLine } from "./log-line.js";
import { findStoreDirectories } from "./session-files.js";
import { FILE_STORE_FORMAT } from "./store-format.js";
import { RECORDS_DIR, SESSIONS_DIR, STORE_MARKER_FILE, StoreLayout } from "./store-layout.js";

/** What {@link upgradeFormat2Store} converted. */
export interface Format2Upgrade {
  /** The store and tenant prefix directories converted. */
  directories: string[];
  sessions: number;
  records: number;
}

const HEAD_SUFFIX = ".head.json";
const INDEX_SUFFIX = ".idx";

/** The format a directory's marker names, or undefined without a readable marker. */
function markerFormat(dir: string): unknown {
  try {
    return (JSON.parse(readFileSync(join(dir, STORE_MARKER_FILE), "utf8")) as { format?: unknown }).format;
  } catch {
    return undefined;
  }
}

/** Writes `data` to `path` through a fsynced temporary file and a rename. */
async function replaceFile(path: string, data: Buffer | string): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeAllSync(fd, typeof data === "string" ? Buffer.from(data) : data);
    await datasyncDescriptor(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** Throws FAILED_PRECONDITION when a lock file in `dir` belongs to a running process (an agentd still uses the store). */
function refuseLiveLocks(dir: string, suffix = ".lock"): void {
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(suffix)) continue;
    const owner = readOwner(join(dir, name));
    if (owner && processAlive(owner.pid)) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        `${join(dir, name)} is held by process ${owner.pid}: stop every agentd using this store before upgrading it`,
      );
    }
  }
}

/** The snapshot IDs of a format-2 session index (`createdAt<TAB>snapshotId` lines), first commit first, each once. */
function indexIds(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const ids = new Set<string>();
  for (const line of text.split("\n")) {
    const id = line.slice(line.indexOf("\t") + 1);
    if (line.includes("\t") && id) ids.add(id);
  }
  return [...ids];
}

/** A format-2 record file's record and version, or undefined when missing or not one of `sessionId`'s. */
function readRecordFile(path: string, sessionId: string): { record: SnapshotRecord; version: number } | undefined {
  let parsed: { format?: unknown; version?: unknown; record?: SnapshotRecord };
  try {
    parsed = JSON.parse(readFileSync(path, "utf8")) as typeof parsed;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new AgentError(
      "DATA_LOSS",
      `record file ${path} cannot be read as a format-2 record; restore it or remove it`,
      {
        cause: err,
      },
    );
  }
  const { format, version, record } = parsed;
  if (format !== 2 || typeof version !== "number" || !record || record.sessionId !== sessionId) return undefined;
  return { record, version };
}

/**
 * Converts one format-2 store (or tenant prefix) directory to format 3: each
 * session's head, index and records become its log (all its records, in
 * commit order, then its head, as one batch), their IDs the snapshot map;
 * then the marker says 3 (the point of no return), then the format-2 files
 * are removed. Records no session lists (a delete a crash interrupted) are
 * dropped with them. Safe to run again after an interruption.
 */
async function upgradeDirectory(dir: string): Promise<{ sessions: number; records: number }> {
  const layout = new StoreLayout(dir);
  const sessionsDir = join(dir, SESSIONS_DIR);
  const recordsDir = join(dir, RECORDS_DIR);
  refuseLiveLocks(sessionsDir);
  if (existsSync(recordsDir)) refuseLiveLocks(recordsDir, ".lock");
  let sessions = 0;
  let records = 0;
  const mapLines: string[] = [];
  for (const name of readdirSync(sessionsDir)) {
    if (!name.endsWith(HEAD_SUFFIX)) continue;
    const key = name.slice(0, -HEAD_SUFFIX.length);
    const headPath = join(sessionsDir, name);
    const parsed = JSON.parse(readFileSync(headPath, "utf8")) as { format?: unknown; head?: SessionHead };
    const head = parsed.head;
    if (parsed.format !== 2 || !head || typeof head.sessionId !== "string") {
      throw new AgentError("DATA_LOSS", `${headPath} is not a format-2 session head; restore it or remove it`);
    }
    const lines = [];
    for (const id of indexIds(join(sessionsDir, `${key}${INDEX_SUFFIX}`))) {
      const file = readRecordFile(join(recordsDir, `${id}.json`), head.sessionId);
      if (!file) continue;
      const { record, version } = file;
      lines.push(encodeRecordLine(record, version).bytes);
      mapLines.push(`\n${record.snapshotId} ${key}\n`);
      records++;
    }
    const headLine = encodeHeadLine(head.version, JSON.stringify(head));
    await replaceFile(layout.logPathOfKey(key), Buffer.concat([...lines, headLine.bytes]));
    sessions++;
  }
  await replaceFile(layout.snapshotMapPath, mapLines.join(""));
  await syncDirectory(sessionsDir);
  await replaceFile(layout.markerPath, `${JSON.stringify({ format: FILE_STORE_FORMAT })}\n`);
  await syncDirectory(dir);
  removeFormat2Files(dir);
  return { sessions, records };
}

/** Removes what format 2 left in a converted directory: `records/`, head files and indexes. */
function removeFormat2Files(dir: string): void {
  rmSync(join(dir, RECORDS_DIR), { recursive: true, force: true });
  const sessionsDir = join(dir, SESSIONS_DIR);
  for (const name of readdirSync(sessionsDir)) {
    if (name.endsWith(HEAD_SUFFIX) || name.endsWith(INDEX_SUFFIX)) unlinkSync(join(sessionsDir, name));
  }
}

/**
 * Converts a file store written by an agentd of store format 2 (the store
 * directory and every tenant prefix directory below it) to format 3, in
 * place. Every agentd using the store must be stopped first: a lock file of a
 * running process stops the upgrade with FAILED_PRECONDITION before anything
 * is changed in that directory. Directories already of format 3 are left as
 * they are (a format-3 directory with format-2 files left by an interrupted
 * upgrade has them removed); a directory of another format fails with
 * FAILED_PRECONDITION. Safe to run again after an interruption.
 */
export async function upgradeFormat2Store(root: string): Promise<Format2Upgrade> {
  const result: Format2Upgrade = { directories: [], sessions: 0, records: 0 };
  const dirs = await findStoreDirectories(root);
  if (dirs.length === 0) throw new AgentError("FAILED_PRECONDITION", `${root} holds no agentd file store`);
  for (const dir of dirs) {
    const format = markerFormat(dir);
    if (format === FILE_STORE_FORMAT) {
      removeFormat2Files(dir);
      continue;
    }
    if (format !== 2) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        `${dir} is not a format-2 store (its marker says ${JSON.stringify(format ?? "nothing")}); nothing was changed there`,
      );
    }
    const converted = await upgradeDirectory(dir);
    result.directories.push(dir);
    result.sessions += converted.sessions;
    result.records += converted.records;
  }
  return result;
}
