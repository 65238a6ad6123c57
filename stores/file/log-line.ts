import { crc32 } from "node:zlib";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotRecord } from "../snapshot-store.js";
import { recordJson } from "./record-json.js";

/** `R`: a snapshot record as stored; `H`: the session head, written last in every batch. */
export type LogLineKind = "R" | "H";

/** The fields of a session log line before its payload. */
export interface LogLineFields {
  kind: LogLineKind;
  /** R: the snapshot ID; H: `-`. */
  id: string;
  /** R: the record's version (1 when committed, +1 on every update); H: the head version. */
  version: number;
  /** R: the record's status; H: `-`. */
  status: string;
  /** R: the record's createdAt (lists sort by it); H: 0. */
  createdAt: number;
}

/** A parsed line header: its fields, the payload's CRC-32 and length, and where the payload starts. */
export interface LogLineHeader extends LogLineFields {
  crc: number;
  /** Payload length in bytes. */
  length: number;
  /** Bytes of the header, the space before the payload included. */
  headerBytes: number;
}

/**
 * Longest header {@link parseLogLineHeader} accepts (a 200-character ID
 * included); reading this many bytes at a line's start always holds its header.
 */
export const MAX_HEADER_BYTES = 320;

const HEADER =
  /^([RH]) ([0-9a-f]{8}) (\d{1,15}) ([A-Za-z0-9][A-Za-z0-9._-]{0,199}|-) (\d{1,16}) ([a-z]{1,16}|-) ([-+.0-9eE]{1,32}) /;
const NEWLINE = 0x0a;

/** An encoded line and its header. */
export interface EncodedLogLine {
  header: LogLineHeader;
  bytes: Buffer;
}

/**
 * One line of a session log:
 * `<kind> <crc32 hex> <payload bytes> <id> <version> <status> <createdAt> <payload>\n`.
 * The payload is JSON (never a raw newline); the header lets a reader list a
 * log's records without reading their payloads, and the CRC tells a torn or
 * garbled line from a written one.
 */
export function encodeLogLine(fields: LogLineFields, payload: string): EncodedLogLine {
  if (!Number.isFinite(fields.createdAt) || !Number.isSafeInteger(fields.version) || fields.version < 0) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `snapshot ${fields.id}: createdAt must be a finite number and the version a non-negative integer`,
    );
  }
  const body = Buffer.from(payload, "utf8");
  const crc = crc32(body);
  const text = `${fields.kind} ${crc.toString(16).padStart(8, "0")} ${body.length} ${fields.id} ${fields.version} ${fields.status} ${fields.createdAt} `;
  const bytes = Buffer.concat([Buffer.from(text, "latin1"), body, Buffer.of(NEWLINE)]);
  return { header: { ...fields, crc, length: body.length, headerBytes: text.length }, bytes };
}

/** The header at the start of `bytes`, or undefined when they do not start with a well-formed one. */
export function parseLogLineHeader(bytes: Buffer): LogLineHeader | undefined {
  const match = HEADER.exec(bytes.toString("latin1", 0, Math.min(bytes.length, MAX_HEADER_BYTES)));
  if (!match) return undefined;
  const createdAt = Number(match[7]);
  if (!Number.isFinite(createdAt)) return undefined;
  return {
    kind: match[1] as LogLineKind,
    crc: Number.parseInt(match[2]!, 16),
    length: Number(match[3]),
    id: match[4]!,
    version: Number(match[5]),
    status: match[6]!,
    createdAt,
    headerBytes: match[0].length,
  };
}

/** True when `line` (payload and the newline after it) is the payload `header` describes: the right length, CRC and final newline. */
export function isIntactPayload(header: LogLineHeader, line: Buffer): boolean {
  return (
    line.length === header.length + 1 &&
    line[header.length] === NEWLINE &&
    crc32(line.subarray(0, header.length)) === header.crc
  );
}

/** The R line of `record` as its version `version` (1 when committed, +1 per update): its JSON (see `recordJson`) under its header. */
export function encodeRecordLine(record: SnapshotRecord<unknown>, version: number): EncodedLogLine {
  const fields = {
    kind: "R" as const,
    id: record.snapshotId,
    version,
    status: record.status,
    createdAt: record.createdAt,
  };
  return encodeLogLine(fields, recordJson(record));
}

/** The H line of a head of version `version` whose JSON is `headJson`. */
export function encodeHeadLine(version: number, headJson: string): EncodedLogLine {
  return encodeLogLine({ kind: "H", id: "-", version, status: "-", createdAt: 0 }, headJson);
}
