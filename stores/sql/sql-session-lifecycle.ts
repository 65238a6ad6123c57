import { checkNow } from "../chunk-arguments.js";
import { checkScanCursor, checkScanLimit } from "../head-scan.js";
import { checkLeasedHeadsLimit } from "../leased-heads.js";
import { checkSessionQuery, encodeHeadPageToken, headMatches } from "../session-query.js";
import type { ExpireHook, HeadPage, SessionHead, SessionQuery } from "../snapshot-store.js";
import type { SqlEngine, SqlExecutor, SqlValue } from "./sql-engine.js";
import { headFromRow, requestsColumn } from "./sql-rows.js";

/** Rows a listing reads per query when label filters leave some out. */
const LISTING_BATCH = 200;

/**
 * Listing, deleting and expiring sessions in the SQL store: keyset pages on
 * the (owner, updated_at, session_id) index, and deletions that remove a
 * session's head, records, request IDs and chunk logs in one transaction.
 */
export class SqlSessionLifecycle {
  constructor(
    private readonly engine: SqlEngine,
    private readonly opened: () => Promise<void>,
  ) {}

  private headSelect(where: string): string {
    return `SELECT h.session_id, h.head, ${requestsColumn(this.engine.dialect, "h.session_id")} FROM heads h WHERE ${where}`;
  }

  /** One page of the owner's sessions, newest updated first (see `SessionStore.listHeads`). */
  async listHeads(query: SessionQuery): Promise<HeadPage> {
    const checked = checkSessionQuery(query);
    await this.opened();
    const { after: _after, ...filters } = checked;
    const matching: SessionHead[] = [];
    let after = checked.after;
    for (;;) {
      const where = ["h.owner = ?", "(h.expires_at IS NULL OR h.expires_at > ?)"];
      const params: SqlValue[] = [checked.owner, checked.now];
      if (checked.agent !== undefined) {
        where.push("h.agent = ?");
        params.push(checked.agent);
      }
      if (checked.updatedAfter !== undefined) {
        where.push("h.updated_at > ?");
        params.push(checked.updatedAfter);
      }
      if (after) {
        where.push("(h.updated_at < ? OR (h.updated_at = ? AND h.session_id < ?))");
        params.push(after.updatedAt, after.updatedAt, after.sessionId);
      }
      const batch = checked.labels ? LISTING_BATCH : checked.pageSize + 1;
      const rows = await this.engine.reader.query(
        `${this.headSelect(where.join(" AND "))} ORDER BY h.updated_at DESC, h.session_id DESC LIMIT ?`,
        [...params, batch],
      );
      for (const row of rows) {
        const head = headFromRow(row);
        if (headMatches(head, filters)) matching.push(head);
      }
      if (matching.length > checked.pageSize || rows.length < batch) break;
      const last = headFromRow(rows[rows.length - 1]!);
      after = { updatedAt: last.updatedAt, sessionId: last.sessionId };
    }
    const heads = matching.slice(0, checked.pageSize);
    return matching.length > heads.length ? { heads, nextPageToken: encodeHeadPageToken(heads.at(-1)!) } : { heads };
  }

  /** Removes everything of the session in one transaction; true when something was there. */
  async deleteSession(sessionId: string): Promise<boolean> {
    await this.opened();
    return this.engine.transaction((tx) => removeSession(tx, sessionId));
  }

  /**
   * Every head after `after` (expired and leased ones included), sessionId
   * ascending in byte order (the keys' "C" collation), at most `limit`: one
   * range read on the primary key (see `SessionStore.scanHeads`).
   */
  async scanHeads(after: string | undefined, limit: number): Promise<SessionHead[]> {
    checkScanCursor(after);
    checkScanLimit(limit);
    await this.opened();
    const rows = await this.engine.reader.query(
      `${this.headSelect(after === undefined ? "1 = 1" : "h.session_id > ?")} ORDER BY h.session_id LIMIT ?`,
      after === undefined ? [limit] : [after, limit],
    );
    return rows.map(headFromRow);
  }

  /** The heads carrying a lease, earliest `lease.expiresAt` first (ties: sessionId ascending). */
  async listLeasedHeads(limit: number): Promise<SessionHead[]> {
    checkLeasedHeadsLimit(limit);
    await this.opened();
    const rows = await this.engine.reader.query(
      `${this.headSelect("h.lease_expires_at IS NOT NULL")} ORDER BY h.lease_expires_at, h.session_id LIMIT ?`,
      [limit],
    );
    return rows.map(headFromRow);
  }

  /**
   * Deletes every session whose expiresAt <= now, each after `beforeExpire`;
   * a session written in between (its expiry moved) stays.
   */
  async sweepExpired(now: number, beforeExpire?: ExpireHook): Promise<number> {
    checkNow(now, "sweepExpired");
    await this.opened();
    const rows = await this.engine.reader.query(
      `${this.headSelect("h.expires_at IS NOT NULL AND h.expires_at <= ?")} ORDER BY h.expires_at`,
      [now],
    );
    let removed = 0;
    for (const row of rows) {
      const head = headFromRow(row);
      if (beforeExpire) await beforeExpire(head);
      const gone = await this.engine.transaction(async (tx) => {
        const still = await tx.query(`SELECT 1 AS found FROM heads WHERE session_id = ? AND expires_at <= ?`, [
          head.sessionId,
          now,
        ]);
        return still.length > 0 && (await removeSession(tx, head.sessionId));
      });
      if (gone) removed++;
    }
    return removed;
  }
}

/** Deletes the session's head, records, request IDs and chunk logs; true when any row went. */
export async function removeSession(tx: SqlExecutor, sessionId: string): Promise<boolean> {
  let removed = 0;
  for (const table of ["heads", "records", "requests", "chunks", "chunk_logs", "tool_calls"])
    removed += await tx.run(`DELETE FROM ${table} WHERE session_id = ?`, [sessionId]);
  return removed > 0;
}
