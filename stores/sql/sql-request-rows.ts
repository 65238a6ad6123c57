import type { CommittedRequest, SessionHead } from "../snapshot-store.js";
import { SessionMemo } from "../session-memo.js";
import type { SqlRow, SqlTransaction } from "./sql-engine.js";

/**
 * What a session's rows in `requests` hold at one head version, as this
 * store last wrote or read them, and the head's `updatedAt` at that version
 * (with the version, what a commit's guard checks).
 */
export interface StoredRequests {
  version: number;
  updatedAt: number;
  requests: readonly CommittedRequest[];
}

/** How many sessions' request rows a store remembers (the least recently used is forgotten first). */
export const KNOWN_REQUESTS_SIZE = 10_000;

/**
 * The request rows of recently used sessions, so that a commit from the
 * version it remembers can send its compare-and-set and its writes in one
 * go instead of reading the rows first. A hint only: the commit's guard
 * (`version` and `updated_at` of the head row) proves the rows are still
 * these; a guard that fails sends the commit again the reading way.
 */
export class KnownRequests {
  private readonly memo: SessionMemo<StoredRequests>;

  constructor(limit = KNOWN_REQUESTS_SIZE) {
    this.memo = new SessionMemo(limit);
  }

  /** The rows remembered for `sessionId` at `version`, if that is the version remembered. */
  at(sessionId: string, version: number): StoredRequests | undefined {
    const known = this.memo.get(sessionId);
    return known?.version === version ? known : undefined;
  }

  /** Remembers the rows of a head read or written (in the same statement or transaction as its version). */
  remember(head: SessionHead): void {
    this.memo.set(head.sessionId, { version: head.version, updatedAt: head.updatedAt, requests: head.requests ?? [] });
  }

  /** Forgets a session (deleted, or its rows are not known any more). */
  forget(sessionId: string): void {
    this.memo.forget(sessionId);
  }
}

/** The entries of `requests` rows read by `SELECT request_id, snapshot_id, committed_at`. */
export function requestsFromRows(rows: readonly SqlRow[]): CommittedRequest[] {
  return rows.map((row) => ({
    requestId: String(row.request_id),
    snapshotId: String(row.snapshot_id),
    committedAt: Number(row.committed_at),
  }));
}

/**
 * Queues the statements that bring the session's rows in `requests` from
 * `stored` to `entries`: deletes the ones no longer listed (or changed) and
 * inserts the new ones after the kept ones (position = head version × 1024
 * + index), so a turn writes one entry, not the list. `stored` must be what
 * the rows hold when the statements run (read in the same transaction, or
 * proven by the commit's guard).
 */
export function writeRequests(
  tx: SqlTransaction,
  sessionId: string,
  entries: readonly CommittedRequest[],
  version: number,
  stored: readonly CommittedRequest[],
): void {
  const wanted = new Map(entries.map((e, i) => [e.requestId, { entry: e, index: i }]));
  for (const row of stored) {
    const want = wanted.get(row.requestId);
    if (want && want.entry.snapshotId === row.snapshotId && want.entry.committedAt === row.committedAt) {
      wanted.delete(row.requestId);
      continue;
    }
    tx.write(`DELETE FROM requests WHERE session_id = ? AND request_id = ?`, [sessionId, row.requestId]);
  }
  for (const { entry, index } of wanted.values())
    tx.write(
      `INSERT INTO requests (session_id, request_id, snapshot_id, committed_at, position) VALUES (?, ?, ?, ?, ?)`,
      [sessionId, entry.requestId, entry.snapshotId, entry.committedAt, version * 1024 + index],
    );
}
