import { closeSync, fstatSync, ftruncateSync, openSync, readdirSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { BOOT_ID, segmentOwner } from "./commit-journal.js";
import { datasyncDescriptor, openIfExists, writeAllSync } from "./descriptor-io.js";
import { unlinkIfExists } from "./session-files.js";
import { processAlive } from "./process-liveness.js";
import { decodeJournalEntries, type BatchEntry, type RemovalEntry } from "./journal-entry.js";
import { readAt, SessionLogView } from "./session-log.js";

/** A segment left by a process that is gone, with the entries to replay, grouped by session log (in order). */
export interface DeadSegment {
  path: string;
  pid: number;
  /** Batches and removals not aborted, per log path relative to the store directory. */
  byLog: Map<string, (BatchEntry | RemovalEntry)[]>;
}

/**
 * The segments in `journalDir` whose process is gone (another boot's, or a
 * pid that no longer runs), `pid` only when given. A segment that cannot be
 * read is skipped (it is tried again later).
 */
export function deadSegments(journalDir: string, pid?: number): DeadSegment[] {
  let names: string[];
  try {
    names = readdirSync(journalDir);
  } catch {
    return [];
  }
  const segments: DeadSegment[] = [];
  for (const name of names.sort()) {
    const owner = segmentOwner(name);
    if (!owner || (pid !== undefined && owner.pid !== pid)) continue;
    if (owner.boot === (BOOT_ID || "noboot") && (owner.pid === process.pid || processAlive(owner.pid))) continue;
    let data: Buffer;
    try {
      data = readFileSync(join(journalDir, name));
    } catch {
      continue;
    }
    const entries = decodeJournalEntries(data);
    const aborted = new Set(entries.flatMap((e) => (e.kind === "abort" ? [e.aborted] : [])));
    const byLog = new Map<string, (BatchEntry | RemovalEntry)[]>();
    for (const entry of entries) {
      if (entry.kind === "abort" || aborted.has(entry.seq)) continue;
      const list = byLog.get(entry.log) ?? [];
      list.push(entry);
      byLog.set(entry.log, list);
    }
    segments.push({ path: join(journalDir, name), pid: owner.pid, byLog });
  }
  return segments;
}

/**
 * Applies a dead process's journal entries to the session log at `path` (the
 * caller holds the session's locks): a batch is written where it was meant
 * to go when the log's complete batches end exactly there (a batch the
 * process recorded but did not get onto the disk), and skipped when the log
 * already holds it or has moved on; a removal removes the log. The log is
 * fdatasynced after. Resolves to the snapshot claims of the batches written
 * or found, for the caller to make again.
 */
export async function applyToLog(path: string, entries: readonly (BatchEntry | RemovalEntry)[]): Promise<BatchEntry[]> {
  const applied: BatchEntry[] = [];
  let fd: number | undefined;
  const closeLog = (): void => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
  };
  try {
    for (const entry of entries) {
      if (entry.kind === "removal") {
        closeLog();
        await unlinkIfExists(path);
        applied.length = 0;
        continue;
      }
      fd ??= openLog(path, entry.offset === 0);
      if (fd === undefined) continue; // no log and the batch is not its first: nothing to apply it to
      const { ino, size } = fstatSync(fd);
      const view = new SessionLogView(path);
      view.refresh(fd, ino, size);
      if (view.validEnd === entry.offset) {
        if (size > entry.offset) ftruncateSync(fd, entry.offset);
        writeAllSync(fd, entry.bytes, entry.offset);
        applied.push(entry);
      } else if (
        size >= entry.offset + entry.bytes.length &&
        readAt(fd, entry.offset, entry.bytes.length).equals(entry.bytes)
      ) {
        applied.push(entry);
      }
    }
    if (fd !== undefined) await datasyncDescriptor(fd);
  } finally {
    closeLog();
  }
  return applied;
}

/** The log opened for writing; created (0600) only with `create`; undefined when it does not exist. */
function openLog(path: string, create: boolean): number | undefined {
  return openIfExists(path, "r+") ?? (create ? openSync(path, "wx+", 0o600) : undefined);
}

/** Removes a replayed segment. */
export function removeSegment(segment: DeadSegment): void {
  try {
    unlinkSync(segment.path);
  } catch {
    // removed by another replayer
  }
}
