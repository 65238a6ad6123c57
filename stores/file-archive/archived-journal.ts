import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { AgentError } from "../../src/errors/agent-error.js";
import { processAlive } from "../process-liveness.js";
import { readArchivedLog } from "./archived-log.js";

/** A batch a process recorded in its journal segment before writing it to its session log, or a log's removal. */
export type JournalChange = { kind: "batch"; offset: number; bytes: Buffer } | { kind: "removal" };

/** A dead process's journal changes, per session log (its path relative to the store directory), with the process's pid. */
export interface DeadJournal {
  pid: number;
  byLog: Map<string, JournalChange[]>;
}

const SEGMENT = /^([0-9a-f]{8}|noboot)-(\d+)-\d+-[0-9a-f]{8}\.jnl$/;
const LINE_START = /^J ([0-9a-f]{8}) (\d{1,9}) (\d{1,12}) /;

/** The first 8 hex digits of this boot's ID ("noboot" off Linux): a segment named for another boot is a dead process's. */
function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").replace(/-/g, "").slice(0, 8);
  } catch {
    return "noboot";
  }
}

interface Entry {
  kind: "batch" | "removal" | "abort";
  seq: number;
  log?: string;
  offset?: number;
  aborted?: number;
  bytes: Buffer;
}

/** A segment's entries (`J <crc> <meta bytes> <batch bytes> <meta JSON><batch>\n`) up to the first torn or garbled one. */
function entriesOf(data: Buffer): Entry[] {
  const entries: Entry[] = [];
  for (let position = 0; position < data.length;) {
    const match = LINE_START.exec(data.toString("latin1", position, Math.min(data.length, position + 40)));
    if (!match) break;
    const metaStart = position + match[0].length;
    const batchStart = metaStart + Number(match[2]);
    const end = batchStart + Number(match[3]);
    if (end + 1 > data.length || data[end] !== 0x0a) break;
    const meta = data.subarray(metaStart, batchStart);
    const bytes = data.subarray(batchStart, end);
    if (crc32(bytes, crc32(meta)) !== Number.parseInt(match[1]!, 16)) break;
    try {
      entries.push({ ...(JSON.parse(meta.toString("utf8")) as Omit<Entry, "bytes">), bytes });
    } catch {
      break;
    }
    position = end + 1;
  }
  return entries;
}

/**
 * The journal segments in `journalDir` (`journal/` of a file store), each as
 * the changes its process recorded and did not abort, per session log, in
 * order. FAILED_PRECONDITION when a segment belongs to a process of this boot
 * that still runs: an agentd is writing the store, and must be stopped first.
 */
export function readDeadJournals(journalDir: string): DeadJournal[] {
  let names: string[];
  try {
    names = readdirSync(journalDir).sort();
  } catch {
    return [];
  }
  const boot = bootId();
  const journals: DeadJournal[] = [];
  for (const name of names) {
    const owner = SEGMENT.exec(name);
    if (!owner) continue;
    const pid = Number(owner[2]);
    if (owner[1] === boot && (pid === process.pid || processAlive(pid))) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        `process ${pid} is writing this file store (its journal segment ${join(journalDir, name)}): stop every agentd using it, then copy it`,
      );
    }
    const entries = entriesOf(readFileSync(join(journalDir, name)));
    const aborted = new Set(entries.flatMap((e) => (e.kind === "abort" ? [e.aborted] : [])));
    const byLog = new Map<string, JournalChange[]>();
    for (const entry of entries) {
      if (entry.kind === "abort" || aborted.has(entry.seq) || entry.log === undefined) continue;
      const change: JournalChange =
        entry.kind === "removal"
          ? { kind: "removal" }
          : { kind: "batch", offset: entry.offset ?? -1, bytes: entry.bytes };
      byLog.set(entry.log, [...(byLog.get(entry.log) ?? []), change]);
    }
    journals.push({ pid, byLog });
  }
  return journals;
}

/**
 * A session log's bytes (undefined: no log) with a dead process's changes
 * applied as the file store replayed them: a batch lands where it was meant to
 * go when the log's complete batches end exactly there (else the log holds it
 * already or moved on), a removal removes the log, and a batch starting a
 * removed or missing log lands only at offset 0. Undefined when no log is left.
 */
export function applyJournal(
  path: string,
  data: Buffer | undefined,
  changes: readonly JournalChange[],
): Buffer | undefined {
  let log = data;
  for (const change of changes) {
    if (change.kind === "removal") {
      log = undefined;
      continue;
    }
    if (log === undefined) {
      if (change.offset === 0) log = Buffer.from(change.bytes);
      continue;
    }
    if (readArchivedLog(path, log).validEnd === change.offset)
      log = Buffer.concat([log.subarray(0, change.offset), change.bytes]);
  }
  return log;
}
