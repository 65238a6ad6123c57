import { crc32 } from "node:zlib";

/** A batch recorded in the commit journal before it is written to its session log. */
export interface BatchEntry {
  kind: "batch";
  /** Number of the entry in its segment (1, 2, …). */
  seq: number;
  /** The session log (absolute path) and where in it the batch goes. */
  log: string;
  offset: number;
  /** The snapshot map (absolute path), the session key and the snapshot IDs the batch claims in it. */
  map?: { path: string; key: string; ids: string[] };
  bytes: Buffer;
}

/** A session log removed (the session was deleted): a replay removes it again after the batches before. */
export interface RemovalEntry {
  kind: "removal";
  seq: number;
  log: string;
}

/** A batch that failed after it was recorded: a replay skips it. */
export interface AbortEntry {
  kind: "abort";
  seq: number;
  /** The `seq` of the failed batch. */
  aborted: number;
}

/** One entry of a journal segment. */
export type JournalEntry = BatchEntry | RemovalEntry | AbortEntry;

const LINE_START = /^J ([0-9a-f]{8}) (\d{1,9}) (\d{1,12}) /;
const MAX_START_BYTES = 40;

/**
 * A journal line: `J <crc32 hex> <meta bytes> <batch bytes> <meta JSON><batch>\n`,
 * the CRC over meta and batch, so a line torn by a crash ends the segment.
 */
export function encodeJournalEntry(entry: JournalEntry): Buffer {
  const { bytes, ...meta } = entry.kind === "batch" ? entry : { ...entry, bytes: Buffer.alloc(0) };
  const metaBytes = Buffer.from(JSON.stringify(meta), "utf8");
  const crc = crc32(bytes, crc32(metaBytes)).toString(16).padStart(8, "0");
  const start = Buffer.from(`J ${crc} ${metaBytes.length} ${bytes.length} `, "latin1");
  return Buffer.concat([start, metaBytes, bytes, Buffer.of(0x0a)]);
}

/**
 * The entries of a segment's bytes, in order, up to the first incomplete or
 * garbled line (the end of what the segment's writer got onto the disk).
 */
export function decodeJournalEntries(data: Buffer): JournalEntry[] {
  const entries: JournalEntry[] = [];
  let position = 0;
  while (position < data.length) {
    const match = LINE_START.exec(data.toString("latin1", position, Math.min(data.length, position + MAX_START_BYTES)));
    if (!match) break;
    const metaStart = position + match[0].length;
    const batchStart = metaStart + Number(match[2]);
    const end = batchStart + Number(match[3]);
    if (end + 1 > data.length || data[end] !== 0x0a) break;
    const metaBytes = data.subarray(metaStart, batchStart);
    const bytes = data.subarray(batchStart, end);
    if (crc32(bytes, crc32(metaBytes)) !== Number.parseInt(match[1]!, 16)) break;
    let meta: Omit<JournalEntry, "bytes">;
    try {
      meta = JSON.parse(metaBytes.toString("utf8")) as Omit<JournalEntry, "bytes">;
    } catch {
      break;
    }
    entries.push(meta.kind === "batch" ? ({ ...meta, bytes } as BatchEntry) : (meta as JournalEntry));
    position = end + 1;
  }
  return entries;
}
