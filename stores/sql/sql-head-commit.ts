import { AgentError } from "../../src/errors/agent-error.js";
import { headToStore } from "../record-identity.js";
import type { CommittedRequest, HeadCommit, SessionHead } from "../snapshot-store.js";
import { type SqlEngine, type SqlTransaction, WriteConflict } from "./sql-engine.js";
import { headValues, HEAD_COLUMNS, RECORD_COLUMNS, recordValues } from "./sql-rows.js";
import { type KnownRequests, requestsFromRows, type StoredRequests, writeRequests } from "./sql-request-rows.js";

const MOVE_HEAD = `UPDATE heads SET owner = ?, agent = ?, version = ?, updated_at = ?, expires_at = ?, lease_expires_at = ?, head = ?
  WHERE session_id = ? AND version = ?`;

/**
 * `SqlSessionStore.commit`: the head's compare-and-set, its record and its
 * request-ID rows in one transaction; the new head, or undefined when the
 * head was not at `expectedVersion` (nothing written). A creation, or a
 * commit from the version whose request rows `known` remembers, sends the
 * compare-and-set as a guard together with its writes (one message to
 * SQLite's writer thread); a guard that fails on a remembered version
 * (another process moved the head, or re-created the session) forgets it
 * and commits again the reading way: the compare-and-set and a read of the
 * rows first, then the writes.
 */
export async function commitHead<S>(
  engine: SqlEngine,
  known: KnownRequests,
  commit: HeadCommit<S>,
): Promise<SessionHead | undefined> {
  const next = headToStore(commit);
  const stored = commit.expectedVersion === 0 ? undefined : known.at(next.sessionId, commit.expectedVersion);
  let moved: boolean;
  try {
    if (commit.expectedVersion === 0) moved = await guarded(engine, commit, next, undefined).catch(conflictAsFalse);
    else if (stored)
      moved = await guarded(engine, commit, next, stored).catch((err: unknown) => {
        if (!(err instanceof WriteConflict)) throw err;
        known.forget(next.sessionId);
        return reading(engine, commit, next);
      });
    else moved = await reading(engine, commit, next);
  } catch (err) {
    known.forget(next.sessionId);
    if (commit.record && err instanceof AgentError && err.status === "ALREADY_EXISTS")
      throw new AgentError(
        "ALREADY_EXISTS",
        `snapshot ${commit.record.snapshotId} already exists; a commit needs a new snapshot ID`,
      );
    throw err;
  }
  if (!moved) return undefined;
  known.remember(next);
  return next;
}

/** A failed guard as "the head did not move"; any other error rethrown. */
function conflictAsFalse(err: unknown): false {
  if (err instanceof WriteConflict) return false;
  throw err;
}

/**
 * The commit as one batch of writes behind a guard: the creating insert
 * (`stored` undefined), or the update where the head is still at the
 * version and `updated_at` whose request rows are `stored`. Rejects with
 * WriteConflict when the guard matches no row.
 */
function guarded<S>(
  engine: SqlEngine,
  commit: HeadCommit<S>,
  next: SessionHead,
  stored: StoredRequests | undefined,
): Promise<boolean> {
  return engine.transaction(async (tx) => {
    const values = headValues(next);
    if (stored)
      tx.guard(`${MOVE_HEAD} AND updated_at = ?`, [
        ...values.slice(1),
        next.sessionId,
        commit.expectedVersion,
        stored.updatedAt,
      ]);
    else
      tx.guard(
        `INSERT INTO heads (${HEAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING`,
        values,
      );
    await writeRecordAndRequests(tx, commit, next, stored?.requests ?? []);
    return true;
  });
}

/** The commit that reads first: the compare-and-set and the session's request rows, then (if it moved) the writes. */
function reading<S>(engine: SqlEngine, commit: HeadCommit<S>, next: SessionHead): Promise<boolean> {
  return engine.transaction(async (tx) => {
    // The compare-and-set and the read of the stored request IDs leave together (one message on SQLite).
    const [changed, rows] = await Promise.all([
      tx.run(MOVE_HEAD, [...headValues(next).slice(1), next.sessionId, commit.expectedVersion]),
      tx.query(`SELECT request_id, snapshot_id, committed_at FROM requests WHERE session_id = ?`, [next.sessionId]),
    ]);
    if (changed === 0) return false;
    await writeRecordAndRequests(tx, commit, next, requestsFromRows(rows));
    return true;
  });
}

/** Queues the commit's record (announcing a pending one) and its request-ID rows, given the rows `stored` now. */
async function writeRecordAndRequests<S>(
  tx: SqlTransaction,
  commit: HeadCommit<S>,
  next: SessionHead,
  stored: readonly CommittedRequest[],
): Promise<void> {
  const record = commit.record;
  if (record) {
    tx.write(`INSERT INTO records (${RECORD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, recordValues(record, 1));
    if (record.status === "pending")
      await tx.announce({ kind: "status", snapshotId: record.snapshotId, status: record.status, version: 1 });
  }
  writeRequests(tx, next.sessionId, next.requests ?? [], next.version, stored);
}
