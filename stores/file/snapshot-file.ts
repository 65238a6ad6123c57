import { open, readFile } from "node:fs/promises";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionSnapshot, SnapshotStatus } from "../../src/types/snapshot.js";

/** On-disk format version written in every snapshot file. */
export const SNAPSHOT_FILE_FORMAT = 1;

/**
 * The small fields written first in every snapshot file, so watchers, the
 * poller and chain pruning can read a few hundred bytes instead of a whole
 * (possibly multi-megabyte) state.
 */
export interface SnapshotFileHeader {
  /** Incremented on every write of the row; orders observations across processes. */
  version: number;
  status: SnapshotStatus;
  createdAt: number;
  parentId?: string;
}

/** A parsed snapshot file. */
export interface SnapshotFile<S> {
  version: number;
  snapshot: SessionSnapshot<S>;
}

/**
 * Serialises a row as `{"format":1,"version":…,"status":…,"createdAt":…,"parentId":…,"snapshot":{…}}`.
 * The header keys always come first and in this order (see {@link readSnapshotHeader}).
 */
export function serializeSnapshotFile<S>(version: number, snapshot: SessionSnapshot<S>): string {
  return JSON.stringify({
    format: SNAPSHOT_FILE_FORMAT,
    version,
    status: snapshot.status,
    createdAt: snapshot.createdAt,
    parentId: snapshot.parentId ?? null,
    snapshot,
  });
}

function corrupt(path: string, cause?: unknown): AgentError {
  return new AgentError("DATA_LOSS", `snapshot file ${path} is not a valid agentd snapshot file; restore it from a backup or delete it`, {
    cause,
  });
}

/** Reads and parses a whole snapshot file; undefined when it does not exist, DATA_LOSS when unreadable. */
export async function readSnapshotFile<S>(path: string): Promise<SnapshotFile<S> | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let parsed: { format?: unknown; version?: unknown; snapshot?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (err) {
    throw corrupt(path, err);
  }
  if (parsed.format !== SNAPSHOT_FILE_FORMAT || typeof parsed.version !== "number" || typeof parsed.snapshot !== "object") {
    throw corrupt(path);
  }
  return { version: parsed.version, snapshot: parsed.snapshot as SessionSnapshot<S> };
}

const HEADER_BYTES = 1024;
const HEADER_PATTERN =
  /^\{"format":1,"version":(\d+),"status":"([a-z]+)","createdAt":(-?[0-9.eE+-]+),"parentId":(null|"[A-Za-z0-9._-]*")/;

/**
 * Reads only the header of a snapshot file (first 1 KiB; the whole file when
 * the header does not fit, e.g. an unusual parentId). Undefined when the file
 * does not exist.
 */
export async function readSnapshotHeader(path: string): Promise<SnapshotFileHeader | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let head: string;
  try {
    const buffer = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEADER_BYTES, 0);
    head = buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
  const match = HEADER_PATTERN.exec(head);
  if (match) {
    const header: SnapshotFileHeader = { version: Number(match[1]), status: match[2] as SnapshotStatus, createdAt: Number(match[3]) };
    if (match[4] !== "null") header.parentId = JSON.parse(match[4]!) as string;
    return header;
  }
  const whole = await readSnapshotFile(path);
  if (!whole) return undefined;
  const { status, createdAt, parentId } = whole.snapshot;
  return { version: whole.version, status, createdAt, ...(parentId !== undefined ? { parentId } : {}) };
}
