import { open } from "node:fs/promises";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { STORE_FORMAT_VERSION, type SnapshotRecord } from "../snapshot-store.js";
import { readTextIfExists } from "./read-text.js";

/**
 * The small fields written first in every record file, so status watchers
 * read a few hundred bytes instead of a (possibly multi-megabyte) record.
 */
export interface RecordFileHeader {
  /** 1 when committed, +1 on every `updateRecord`; orders status observations across processes. */
  version: number;
  status: SnapshotStatus;
}

/** A parsed record file. */
export interface RecordFile<S> extends RecordFileHeader {
  record: SnapshotRecord<S>;
}

/**
 * The record as JSON. A record too large for one JavaScript string fails with
 * RESOURCE_EXHAUSTED before anything is written.
 */
export function recordJson<S>(record: SnapshotRecord<S>): string {
  try {
    return JSON.stringify(record);
  } catch (err) {
    if (err instanceof RangeError) {
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `snapshot ${record.snapshotId} is too large to store as one file (${err.message})`,
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * A record file's text: `{"format":2,"version":…,"status":…,"record":{…}}`,
 * header keys first and in this order (see {@link readRecordHeader}); `json`
 * is {@link recordJson} of the record, so a commit serializes its record once.
 */
export function recordFileText(version: number, status: SnapshotStatus, json: string): string {
  return `{"format":${STORE_FORMAT_VERSION},"version":${version},"status":${JSON.stringify(status)},"record":${json}}`;
}

function corrupt(path: string, why: string, cause?: unknown): AgentError {
  return new AgentError(
    "DATA_LOSS",
    `record file ${path} is not a valid agentd record (${why}); restore it from a backup`,
    {
      ...(cause !== undefined ? { cause } : {}),
    },
  );
}

/**
 * Reads and parses a whole record file. Undefined when it does not exist;
 * DATA_LOSS when it exists but is not a format-2 record of `snapshotId`
 * (truncated, garbled, or another file renamed into place).
 */
export async function readRecordFile<S>(path: string, snapshotId: string): Promise<RecordFile<S> | undefined> {
  const text = await readTextIfExists(path);
  if (text === undefined) return undefined;
  let parsed: { format?: unknown; version?: unknown; status?: unknown; record?: SnapshotRecord<S> };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (err) {
    throw corrupt(path, "not JSON", err);
  }
  const { format, version, status, record } = parsed ?? {};
  if (format !== STORE_FORMAT_VERSION) throw corrupt(path, `format ${JSON.stringify(format)}`);
  if (typeof version !== "number" || typeof status !== "string" || record === null || typeof record !== "object") {
    throw corrupt(path, "missing version, status or record");
  }
  if (record.snapshotId !== snapshotId || record.status !== status)
    throw corrupt(path, "header does not match the record");
  return { version, status: status as SnapshotStatus, record };
}

const HEADER_BYTES = 1024;
const HEADER_PATTERN = /^\{"format":2,"version":(\d+),"status":("(?:[^"\\]|\\.)*"),"record":/;

/**
 * Reads only a record file's header (its first 1 KiB). Undefined when the
 * file does not exist; DATA_LOSS when the header is not a record header.
 */
export async function readRecordHeader(path: string): Promise<RecordFileHeader | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let start: string;
  try {
    const buffer = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEADER_BYTES, 0);
    start = buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
  const match = HEADER_PATTERN.exec(start);
  if (!match) throw corrupt(path, "no record header in its first 1 KiB");
  return { version: Number(match[1]), status: JSON.parse(match[2]!) as SnapshotStatus };
}
