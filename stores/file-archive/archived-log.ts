import { crc32 } from "node:zlib";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead } from "../snapshot-store.js";

/**
 * A session log of the retired file store (format 3, `sessions/<key>.log`),
 * read whole from its bytes: the head of its last complete batch and the
 * newest line of every record. Lines are
 * `<R|H> <crc32 hex> <payload bytes> <id> <version> <status> <createdAt> <payload>\n`;
 * a batch is R lines then one H line (the session's head), and counts once
 * its H line is intact, so a batch a crash tore off the end is not read.
 */
export interface ArchivedLog {
  /** The last complete batch's head; undefined when the log holds none. */
  head: SessionHead | undefined;
  /** Every record's newest payload (JSON bytes), in the order of its first commit. */
  records: Map<string, Buffer>;
  /** Where the complete batches end (where the next batch went). */
  validEnd: number;
}

const HEADER =
  /^([RH]) ([0-9a-f]{8}) (\d{1,15}) ([A-Za-z0-9][A-Za-z0-9._-]{0,199}|-) (\d{1,16}) ([a-z]{1,16}|-) ([-+.0-9eE]{1,32}) /;
const MAX_HEADER_BYTES = 320;
const STATUSES: ReadonlySet<string> = new Set(["pending", "completed", "failed", "aborted", "expired"]);

/** One intact line at `position`: its kind, ID, payload and where the next line starts; undefined for a torn or garbled one. */
function lineAt(
  data: Buffer,
  position: number,
): { kind: string; id: string; payload: Buffer; end: number } | undefined {
  const match = HEADER.exec(data.toString("latin1", position, Math.min(data.length, position + MAX_HEADER_BYTES)));
  if (!match) return undefined;
  const start = position + match[0].length;
  const end = start + Number(match[3]) + 1;
  if (end > data.length || data[end - 1] !== 0x0a) return undefined;
  const payload = data.subarray(start, end - 1);
  if (crc32(payload) !== Number.parseInt(match[2]!, 16)) return undefined;
  if (match[1] === "R" && !STATUSES.has(match[6]!)) return undefined;
  return { kind: match[1]!, id: match[4]!, payload, end };
}

function parseHead(path: string, payload: Buffer): SessionHead {
  let head: SessionHead | undefined;
  try {
    head = JSON.parse(payload.toString("utf8")) as SessionHead;
  } catch {
    head = undefined;
  }
  if (!head || typeof head !== "object" || !Number.isInteger(head.version) || typeof head.sessionId !== "string")
    throw new AgentError("DATA_LOSS", `session log ${path} holds a head that is not an agentd session head`);
  return head;
}

/** True when an intact H line starts after `from` (the log is garbled in the middle, not torn at its end). */
function intactHeadAfter(data: Buffer, from: number): boolean {
  for (let at = data.indexOf("\nH ", Math.max(0, from - 1)); at >= 0; at = data.indexOf("\nH ", at + 1)) {
    if (lineAt(data, at + 1)?.kind === "H") return true;
  }
  return false;
}

/**
 * Reads the complete batches of the session log at `path` (its bytes `data`).
 * DATA_LOSS, naming the log, when a garbled line lies before a later complete
 * batch, or an intact H line does not hold a head.
 */
export function readArchivedLog(path: string, data: Buffer): ArchivedLog {
  const log: ArchivedLog = { head: undefined, records: new Map(), validEnd: 0 };
  const pending: [string, Buffer][] = [];
  for (let position = 0; position < data.length;) {
    const line = lineAt(data, position);
    if (!line) break;
    if (line.kind === "R") {
      pending.push([line.id, line.payload]);
    } else {
      log.head = parseHead(path, line.payload);
      for (const [id, payload] of pending) log.records.set(id, payload);
      pending.length = 0;
      log.validEnd = line.end;
    }
    position = line.end;
  }
  if (log.validEnd < data.length && intactHeadAfter(data, log.validEnd)) {
    throw new AgentError(
      "DATA_LOSS",
      `session log ${path} is garbled at byte ${log.validEnd}, before later complete batches; restore it from a backup`,
    );
  }
  return log;
}
