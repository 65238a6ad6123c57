import { ftruncateSync } from "node:fs";
import { relative } from "node:path";
import type { SessionHead } from "../snapshot-store.js";
import type { CommitJournal } from "./commit-journal.js";
import { datasyncDescriptor, writeAllAt } from "./descriptor-io.js";
import { syncDirectory } from "./directory-sync.js";
import type { EncodedLogLine } from "./log-line.js";
import type { SessionLogView } from "./session-log.js";
import type { SnapshotMap } from "./snapshot-map.js";

/** A session log opened for appending, under the session's locks. */
export interface LogWriter {
  /** The session's log as this process knows it (current: the locks exclude other writers). */
  readonly view: SessionLogView;
  /** True when the log file exists. */
  readonly exists: boolean;
  /**
   * Appends a batch (record lines, then the head line), which claims `claim`
   * in the snapshot map, and with fsync waits until it is durable: recorded
   * in the commit journal (then written to the log), or written and
   * fdatasynced with the map. Creates the log (0600) when it does not exist
   * yet. When any of it fails, the log is cut back to where the batch began
   * (and the journal told to skip it) and the error thrown.
   */
  append(lines: readonly EncodedLogLine[], head: SessionHead, claim?: MapClaim): Promise<void>;
}

/** Snapshot IDs a batch claims in a store directory's snapshot map, for its session key. */
export interface MapClaim {
  map: SnapshotMap;
  key: string;
  ids: string[];
}

/** An open session log of a session whose lock this process holds. */
export interface OpenLog {
  fd: number;
  view: SessionLogView;
}

/** What appending a batch needs of the store. */
export interface AppendContext {
  /** The store directory (journal paths are relative to it). */
  root: string;
  /** Make the batch durable before resolving. */
  fsync: boolean;
  /** The commit journal (with fsync): the batch waits for its group fsync instead of its log's. */
  journal: CommitJournal | undefined;
  /** The log's directory, synced when the batch created the log and there is no journal. */
  sessionsDir: string;
}

/**
 * Appends a batch at the end of the open log's complete batches (see
 * `LogWriter.append`): with a journal, records it there and waits for the
 * group fsync, then writes it; without, writes it and fdatasyncs the log and
 * the snapshot map. On failure the log is cut back (and the journal told to
 * skip the batch), the view set to read the log again, and the error thrown.
 * Then the batch is applied to the open log's view.
 */
export async function appendBatch(
  c: AppendContext,
  path: string,
  open: OpenLog,
  created: boolean,
  lines: readonly EncodedLogLine[],
  head: SessionHead,
  claim: MapClaim | undefined,
): Promise<void> {
  const { fd, view } = open;
  const start = view.validEnd;
  const bytes = lines.length === 1 ? lines[0]!.bytes : Buffer.concat(lines.map((l) => l.bytes));
  const cutBack = (): void => {
    try {
      ftruncateSync(fd, start);
    } catch {
      // the next writer cuts the incomplete batch off
    }
    view.ino = -1; // read it again
  };
  if (c.journal) {
    const map = claim && { path: relative(c.root, claim.map.path), key: claim.key, ids: claim.ids };
    const ticket = c.journal.recordBatch(
      { log: relative(c.root, path), offset: start, bytes, ...(map ? { map } : {}) },
      created,
    );
    try {
      await ticket.durable;
      await writeAllAt(fd, bytes, start);
    } catch (err) {
      cutBack();
      await ticket.abort().catch(() => undefined);
      throw err;
    }
    ticket.done();
  } else {
    try {
      await writeAllAt(fd, bytes, start);
      if (c.fsync) {
        await Promise.all([
          datasyncDescriptor(fd).then(() => (created ? syncDirectory(c.sessionsDir) : undefined)),
          claim?.map.sync(),
        ]);
      }
    } catch (err) {
      cutBack();
      throw err;
    }
  }
  if (view.validEnd === start) view.applyAppended(lines, head);
  else if (view.validEnd !== start + bytes.length) view.ino = -1; // a reader of this process read it meanwhile
}
