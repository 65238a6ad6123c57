import { AgentError } from "../../src/errors/agent-error.js";
import type { ChunkLogKey } from "../chunk-log.js";
import type { SqlDialect, SqlTransaction, SqlValue } from "./sql-engine.js";

// Fencing a chunk log by run, in SQL. The log's row (chunk_logs) carries the latest run that claimed
// it (`run`, 0 until a takeover claims it) and each chunk row the run that appended it (NULL for an
// append that names no run). Every fenced append and every claim starts its transaction with an
// upsert of the log's row, which serializes them on that row (PostgreSQL: its row lock, held to
// COMMIT; SQLite: the database's write lock), so a claim and an earlier run's append never
// interleave: the append either lands before the claim (and the claim goes after it) or sees the
// claim's run and is refused ABORTED, naming the later run.

/** A fenced key: the run that appends or claims. */
export type RunKey = ChunkLogKey & { run: number };

/** ABORTED for an append (or claim) of `run` to a log that a later run claimed. */
export function superseded(key: ChunkLogKey, run: number, by: number): AgentError {
  return new AgentError(
    "ABORTED",
    `the chunk log of snapshot ${key.snapshotId} was taken over by run ${by} of its work; this run's (${run}) append is refused`,
    { details: { snapshotId: key.snapshotId, run, supersededBy: by } },
  );
}

/**
 * Upserts the log's row (keep-until and last sequence only move later) and
 * resolves to what it then holds: the latest run that claimed it and its
 * last sequence. Locks the row until the transaction ends.
 */
export async function upsertLog(
  tx: SqlTransaction,
  dialect: SqlDialect,
  key: ChunkLogKey,
  keepUntil: number,
  lastSequence: number,
): Promise<{ run: number; lastSequence: number }> {
  const greatest = dialect === "postgres" ? "GREATEST" : "MAX";
  const rows = await tx.query(
    `INSERT INTO chunk_logs (session_id, snapshot_id, keep_until, last_sequence, run) VALUES (?, ?, ?, ?, 0)
     ON CONFLICT (session_id, snapshot_id) DO UPDATE SET
       keep_until = ${greatest}(chunk_logs.keep_until, excluded.keep_until),
       last_sequence = ${greatest}(chunk_logs.last_sequence, excluded.last_sequence)
     RETURNING run, last_sequence`,
    [key.sessionId, key.snapshotId, keepUntil, lastSequence],
  );
  return { run: Number(rows[0]!.run), lastSequence: Number(rows[0]!.last_sequence) };
}

/**
 * The checks of run `key.run`'s append of `first..last`, after its upsert
 * (see {@link upsertLog}) found the log claimed by `claimed`: ABORTED when
 * a later run claimed the log; resolves true when this run already holds
 * every one of those sequences (a repeated append: nothing to insert),
 * false when none is held (insert them); ALREADY_EXISTS otherwise.
 */
export async function checkFencedAppend(
  tx: SqlTransaction,
  key: RunKey,
  claimed: number,
  first: number,
  last: number,
): Promise<boolean> {
  if (claimed > key.run) throw superseded(key, key.run, claimed);
  const held = await tx.query(
    `SELECT sequence, run FROM chunks WHERE session_id = ? AND snapshot_id = ? AND sequence >= ? AND sequence <= ?`,
    [key.sessionId, key.snapshotId, first, last],
  );
  if (held.length === 0) return false;
  for (const row of held) {
    const run = row.run === null ? 0 : Number(row.run);
    if (run > key.run) throw superseded(key, key.run, run);
  }
  if (held.length === last - first + 1 && held.every((row) => row.run !== null && Number(row.run) === key.run))
    return true;
  throw new AgentError(
    "ALREADY_EXISTS",
    `appendChunks: the log of snapshot ${key.snapshotId} already holds a chunk with one of sequences ${first}..${last}; nothing was appended`,
  );
}

/**
 * Claims the log for run `key.run` in `tx`: its first chunk (`json(sequence)`)
 * at the log's next free sequence after `afterSequence`, and the log's run
 * set to `key.run`. Resolves to that sequence; when this run claimed the log
 * before (a retry whose first reply was lost), to its first chunk's sequence,
 * writing nothing. ABORTED when a later run holds the log.
 */
export async function claimInTransaction(
  tx: SqlTransaction,
  dialect: SqlDialect,
  key: RunKey,
  afterSequence: number,
  keepUntil: number,
  json: (sequence: number) => string,
): Promise<{ sequence: number; claimedNow: boolean }> {
  const log = await upsertLog(tx, dialect, key, keepUntil, afterSequence);
  if (log.run > key.run) throw superseded(key, key.run, log.run);
  if (log.run === key.run) {
    const mine = await tx.query(
      `SELECT MIN(sequence) AS first FROM chunks WHERE session_id = ? AND snapshot_id = ? AND sequence > ? AND run = ?`,
      [key.sessionId, key.snapshotId, afterSequence, key.run],
    );
    if (mine[0]?.first !== null && mine[0]?.first !== undefined)
      return { sequence: Number(mine[0].first), claimedNow: false };
  }
  const sequence = Math.max(log.lastSequence, afterSequence) + 1;
  const params: SqlValue[] = [key.sessionId, key.snapshotId, sequence, json(sequence), key.run];
  tx.write(`INSERT INTO chunks (session_id, snapshot_id, sequence, chunk, run) VALUES (?, ?, ?, ?, ?)`, params);
  tx.write(`UPDATE chunk_logs SET run = ?, last_sequence = ? WHERE session_id = ? AND snapshot_id = ?`, [
    key.run,
    sequence,
    key.sessionId,
    key.snapshotId,
  ]);
  return { sequence, claimedNow: true };
}
