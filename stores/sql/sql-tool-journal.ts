import {
  checkJournalScope,
  checkJournaledCall,
  journalFullError,
  MAX_JOURNALED_CALLS,
  TOOL_JOURNAL_TTL_MS,
  type JournaledToolCall,
  type ToolJournalScope,
} from "../tool-result-journal.js";
import type { SqlEngine, SqlRow } from "./sql-engine.js";

/**
 * The tool-call journals of the SQL store (see `ToolResultJournal`): a
 * `tool_calls` row per call, keyed by (session, request ID, call key),
 * written by one transaction per call (durable when it resolves: SQLite's
 * default synchronous=FULL, PostgreSQL's commit). A result never goes back
 * to a start (the upsert keeps a row that has one). Rows older than
 * {@link TOOL_JOURNAL_TTL_MS} are not returned and are removed by the next
 * write of their session.
 */
export class SqlToolJournal {
  constructor(
    private readonly engine: SqlEngine,
    private readonly opened: () => Promise<void>,
  ) {}

  /** Records `call` in one transaction; RESOURCE_EXHAUSTED when the scope is full. */
  async record(scope: ToolJournalScope, call: JournaledToolCall, now = Date.now()): Promise<void> {
    checkJournalScope(scope);
    const output = checkJournaledCall(call);
    await this.opened();
    await this.engine.transaction(async (tx) => {
      tx.write("DELETE FROM tool_calls WHERE session_id = ? AND recorded_at < ?", [
        scope.sessionId,
        now - TOOL_JOURNAL_TTL_MS,
      ]);
      const counted = await tx.query(
        "SELECT COUNT(*) AS n, SUM(CASE WHEN call_key = ? THEN 1 ELSE 0 END) AS mine FROM tool_calls WHERE session_id = ? AND request_id = ?",
        [call.key, scope.sessionId, scope.requestId],
      );
      const n = Number(counted[0]?.n ?? 0);
      const mine = Number(counted[0]?.mine ?? 0);
      if (mine === 0 && n >= MAX_JOURNALED_CALLS) throw journalFullError(scope);
      await tx.run(
        `INSERT INTO tool_calls (session_id, request_id, call_key, tool, started_at, ended_at, output, recorded_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (session_id, request_id, call_key) DO UPDATE SET
           tool = excluded.tool, started_at = excluded.started_at, ended_at = excluded.ended_at,
           output = excluded.output, recorded_at = excluded.recorded_at
         WHERE tool_calls.ended_at IS NULL OR excluded.ended_at IS NOT NULL`,
        [
          scope.sessionId,
          scope.requestId,
          call.key,
          call.tool,
          call.startedAt,
          output === undefined ? null : call.endedAt!,
          output ?? null,
          now,
        ],
      );
    });
  }

  /** The calls journaled under `scope` (one indexed query). */
  async list(scope: ToolJournalScope, now = Date.now()): Promise<JournaledToolCall[]> {
    checkJournalScope(scope);
    await this.opened();
    const rows = await this.engine.reader.query(
      `SELECT call_key, tool, started_at, ended_at, output FROM tool_calls
       WHERE session_id = ? AND request_id = ? AND recorded_at >= ?`,
      [scope.sessionId, scope.requestId, now - TOOL_JOURNAL_TTL_MS],
    );
    return rows.map(callFromRow);
  }

  /** Removes the scope's rows. */
  async drop(scope: ToolJournalScope): Promise<void> {
    checkJournalScope(scope);
    await this.opened();
    await this.engine.transaction(async (tx) => {
      await tx.run("DELETE FROM tool_calls WHERE session_id = ? AND request_id = ?", [
        scope.sessionId,
        scope.requestId,
      ]);
    });
  }
}

function callFromRow(row: SqlRow): JournaledToolCall {
  const call: JournaledToolCall = {
    key: String(row.call_key),
    tool: String(row.tool),
    startedAt: Number(row.started_at),
  };
  if (row.ended_at !== null && row.ended_at !== undefined) {
    call.endedAt = Number(row.ended_at);
    call.output = JSON.parse(String(row.output));
  }
  return call;
}
