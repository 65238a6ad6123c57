import { readSync } from "node:fs";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { deepFreeze } from "../ledger/frozen-value.js";
import type { SessionHead } from "../snapshot-store.js";
import {
  isIntactPayload,
  MAX_HEADER_BYTES,
  parseLogLineHeader,
  type EncodedLogLine,
  type LogLineHeader,
} from "./log-line.js";

/** Where a record's newest version lies in a session log, and its header fields. */
export interface LoggedRecord {
  header: LogLineHeader;
  /** Offset of the payload in the log. */
  offset: number;
  version: number;
  status: SnapshotStatus;
  createdAt: number;
}

const STATUSES: ReadonlySet<string> = new Set(["pending", "completed", "failed", "aborted", "expired"]);
const WINDOW_BYTES = 64 * 1024;
const TAIL_BYTES = 16 * 1024;

/** Reads a file through a 64 KiB window, so scanning many short lines costs few system calls. */
class WindowReader {
  private window: Buffer = Buffer.alloc(0);
  private start = 0;

  constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {}

  /** Up to `length` bytes at `offset` (fewer at the end of the file). */
  bytes(offset: number, length: number): Buffer {
    const wanted = Math.min(length, this.size - offset);
    const from = offset - this.start;
    if (from >= 0 && from + wanted <= this.window.length) return this.window.subarray(from, from + wanted);
    this.window = readAt(this.fd, offset, Math.min(Math.max(wanted, WINDOW_BYTES), this.size - offset));
    this.start = offset;
    return this.window.subarray(0, Math.min(wanted, this.window.length));
  }
}

/** `length` bytes of `fd` at `offset`, fewer only at the end of the file. */
export function readAt(fd: number, offset: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const n = readSync(fd, buffer, filled, length - filled, offset + filled);
    if (n === 0) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/** The head in an intact H line's payload (deep-frozen); DATA_LOSS when it is not a session head. */
function parseHead(path: string, payload: Buffer): SessionHead {
  let head: SessionHead | undefined;
  let cause: unknown;
  try {
    head = JSON.parse(payload.toString("utf8")) as SessionHead;
  } catch (err) {
    cause = err;
  }
  if (!head || typeof head !== "object" || !Number.isInteger(head.version) || typeof head.sessionId !== "string") {
    throw new AgentError(
      "DATA_LOSS",
      `session log ${path} holds a head that is not a valid agentd session head; restore it from a backup`,
      {
        ...(cause !== undefined ? { cause } : {}),
      },
    );
  }
  return deepFreeze(head);
}

/**
 * What tells one file from another at the same path: its inode and its
 * creation time (a removed file's inode is soon given to the next new file).
 */
export function fileIdentity(info: { ino: number; birthtimeMs: number }): string {
  return `${info.ino}:${info.birthtimeMs}`;
}

/**
 * The head in the last line of a log file of `size` bytes, when that line is
 * an intact H line (the usual case: every batch ends with one); undefined
 * otherwise (a batch being written or torn), and the caller scans instead.
 * Reads at most the last 16 KiB.
 */
export function readTailHead(fd: number, size: number, path: string): SessionHead | undefined {
  if (size === 0) return undefined;
  const from = Math.max(0, size - TAIL_BYTES);
  const tail = readAt(fd, from, size - from);
  if (tail[tail.length - 1] !== 0x0a) return undefined;
  const start = tail.lastIndexOf(0x0a, tail.length - 2) + 1;
  if (start === 0 && from > 0) return undefined; // the line is longer than the tail read
  const header = parseLogLineHeader(tail.subarray(start));
  if (!header || header.kind !== "H") return undefined;
  const line = tail.subarray(start + header.headerBytes);
  return isIntactPayload(header, line) ? parseHead(path, line.subarray(0, header.length)) : undefined;
}

/**
 * True when an intact H line starts after `from`: the log is garbled in the
 * middle, not merely at its end (a batch being written, or torn by a crash,
 * never has a complete head after its broken part). Payloads are JSON, so a
 * raw newline only ever ends a line.
 */
function intactHeadAfter(reader: WindowReader, from: number, size: number): boolean {
  for (let position = from; position < size;) {
    const window = reader.bytes(position, WINDOW_BYTES);
    let at = window.indexOf("\nH ");
    while (at >= 0) {
      const start = position + at + 1;
      const header = parseLogLineHeader(reader.bytes(start, MAX_HEADER_BYTES));
      if (header?.kind === "H") {
        const offset = start + header.headerBytes;
        if (offset + header.length + 1 <= size && isIntactPayload(header, reader.bytes(offset, header.length + 1)))
          return true;
      }
      at = window.indexOf("\nH ", at + 1); // `window` stays valid when the reader reads elsewhere
    }
    if (window.length < 3) break;
    position += window.length - 2; // overlap: a match may straddle two windows
  }
  return false;
}

/**
 * What one process knows of one session log (`sessions/<key>.log`): its
 * complete batches, read incrementally. A batch is the lines one commit or
 * record update appends: R lines, then the H line with the session's head. A
 * batch counts once its H line is intact, so a batch being appended by
 * another process, or torn by a crash, is never seen; scanning stops there.
 * Records keep the order of their first commit; a later R line of the same ID
 * (an update) replaces what is known of it.
 */
export class SessionLogView {
  /**
   * The file scanned (its `fileIdentity`, or any number a caller uses): another
   * file (the log was replaced, or deleted and created again) starts over.
   */
  ino: number | string = -1;
  /** Bytes of complete batches from the start of the file: where the next batch goes. */
  validEnd = 0;
  /** Start of the last complete batch. */
  lastBatchStart = 0;
  /** The head of the last complete batch. */
  head: SessionHead | undefined;
  /** The records, in the order of their first commit. */
  readonly records = new Map<string, LoggedRecord>();

  constructor(readonly path: string) {}

  /**
   * Reads the batches appended since the last call from `fd`, the log file
   * with inode `ino` and `size` bytes; starts over for another inode or a
   * shorter file. DATA_LOSS when an intact H line does not hold a head.
   */
  refresh(fd: number, ino: number | string, size: number): void {
    if (ino !== this.ino || size < this.validEnd) this.reset(ino);
    if (size > this.validEnd) this.scan(fd, size);
  }

  private reset(ino: number | string): void {
    this.ino = ino;
    this.validEnd = 0;
    this.lastBatchStart = 0;
    this.head = undefined;
    this.records.clear();
  }

  private scan(fd: number, size: number): void {
    const reader = new WindowReader(fd, size);
    const end = this.scanBatches(reader, size);
    if (end < size && intactHeadAfter(reader, end, size)) {
      throw new AgentError(
        "DATA_LOSS",
        `session log ${this.path} is garbled at byte ${end}, before later complete batches; restore it from a backup`,
      );
    }
  }

  /** Reads the complete batches from `validEnd`; returns where reading stopped (the end, or an incomplete or garbled line). */
  private scanBatches(reader: WindowReader, size: number): number {
    const pending: [string, LoggedRecord][] = [];
    let position = this.validEnd;
    while (position < size) {
      const header = parseLogLineHeader(reader.bytes(position, MAX_HEADER_BYTES));
      if (!header) break;
      const offset = position + header.headerBytes;
      const end = offset + header.length + 1;
      if (end > size) break;
      if (header.kind === "R") {
        if (!STATUSES.has(header.status) || reader.bytes(end - 1, 1)[0] !== 0x0a) break;
        const { version, createdAt } = header;
        pending.push([header.id, { header, offset, version, status: header.status as SnapshotStatus, createdAt }]);
      } else {
        const line = reader.bytes(offset, header.length + 1);
        if (!isIntactPayload(header, line)) break;
        this.head = parseHead(this.path, line.subarray(0, header.length));
        for (const [id, record] of pending) this.records.set(id, record);
        pending.length = 0;
        this.lastBatchStart = this.validEnd;
        this.validEnd = end;
      }
      position = end;
    }
    return this.validEnd;
  }

  /** Applies a batch this process appended at `validEnd` (the encoded lines and their headers). */
  applyAppended(lines: readonly EncodedLogLine[], head: SessionHead): void {
    let position = this.validEnd;
    this.lastBatchStart = position;
    for (const { header, bytes } of lines) {
      if (header.kind === "R") {
        const { version, createdAt } = header;
        const offset = position + header.headerBytes;
        this.records.set(header.id, { header, offset, version, status: header.status as SnapshotStatus, createdAt });
      }
      position += bytes.length;
    }
    this.validEnd = position;
    this.head = head;
  }

  /** True when every R line of the last complete batch is intact (their payloads are read and checked). */
  lastBatchIntact(fd: number): boolean {
    for (const record of this.records.values()) {
      if (record.offset < this.lastBatchStart) continue;
      if (!isIntactPayload(record.header, readAt(fd, record.offset, record.header.length + 1))) return false;
    }
    return true;
  }

  /** The payload of `record` read from `fd`; DATA_LOSS when it is not intact. */
  readPayload(fd: number, record: LoggedRecord): Buffer {
    const line = readAt(fd, record.offset, record.header.length + 1);
    if (!isIntactPayload(record.header, line)) {
      throw new AgentError(
        "DATA_LOSS",
        `session log ${this.path} holds a garbled record ${record.header.id} at byte ${record.offset}; restore it from a backup`,
      );
    }
    return line.subarray(0, record.header.length);
  }
}
