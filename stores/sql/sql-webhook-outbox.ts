import {
  parseWebhookCursor,
  webhookCursor,
  webhookPageSize,
  type WebhookAttemptUpdate,
  type WebhookClaimOptions,
  type WebhookEvent,
  type WebhookEventPage,
  type WebhookEventQuery,
  type WebhookOutbox,
} from "../webhook-outbox.js";
import type { SqlEngine, SqlRow, SqlValue } from "./sql-engine.js";

const COLUMNS = "event, lease_instance, lease_until";

/** An event from its row: the stored JSON plus the lease columns. */
function eventFromRow(row: SqlRow): WebhookEvent {
  const event = JSON.parse(String(row.event)) as WebhookEvent;
  if (row.lease_instance !== null && row.lease_instance !== undefined)
    event.lease = { instance: String(row.lease_instance), until: Number(row.lease_until) };
  return event;
}

/** The event's JSON without its lease (the lease lives in columns, so a claim does not rewrite the body). */
function eventJson(event: WebhookEvent): string {
  const { lease: _lease, ...rest } = event;
  return JSON.stringify(rest);
}

/**
 * The webhook outbox of the SQL store: one row per event in `webhooks`,
 * shared by every instance on the database. Claims are one statement that
 * leases the due rows it selects; on PostgreSQL the selection takes row
 * locks with `FOR UPDATE SKIP LOCKED`, so instances claiming at once split
 * the due events instead of waiting for each other (SQLite's single writer
 * serializes claims). `settle` writes only while the caller's lease is the
 * stored one.
 */
export class SqlWebhookOutbox implements WebhookOutbox {
  constructor(
    private readonly engine: SqlEngine,
    private readonly opened: () => Promise<void>,
  ) {}

  /** Inserts the event unless its ID exists. */
  async put(event: WebhookEvent): Promise<boolean> {
    await this.opened();
    const changed = await this.engine.transaction((tx) =>
      tx.run(
        `INSERT INTO webhooks (id, tenant, created_at, state, next_attempt_at, lease_instance, lease_until, url, event)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        [
          event.id,
          event.tenant,
          event.createdAt,
          event.state,
          event.nextAttemptAt,
          event.lease?.instance ?? null,
          event.lease?.until ?? null,
          event.url,
          eventJson(event),
        ],
      ),
    );
    return changed === 1;
  }

  /** Leases up to `limit` due events to `instance`, oldest first, none of an endpoint in `options.skipUrls`. */
  async claim(
    instance: string,
    now: number,
    leaseMs: number,
    limit: number,
    options?: WebhookClaimOptions,
  ): Promise<WebhookEvent[]> {
    await this.opened();
    const lock = this.engine.dialect === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
    const skip = [...new Set(options?.skipUrls ?? [])];
    const skipped = skip.length ? ` AND url NOT IN (${skip.map(() => "?").join(", ")})` : "";
    const rows = await this.engine.transaction((tx) =>
      tx.query(
        `UPDATE webhooks SET lease_instance = ?, lease_until = ?
         WHERE id IN (SELECT id FROM webhooks
                      WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)${skipped}
                      ORDER BY created_at, id LIMIT ?${lock})
         RETURNING ${COLUMNS}`,
        [instance, now + leaseMs, now, now, ...skip, Math.max(0, Math.floor(limit))],
      ),
    );
    return rows.map(eventFromRow).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }

  /** Writes the attempt's outcome and drops the lease while `instance` holds it. */
  async settle(id: string, instance: string, update: WebhookAttemptUpdate): Promise<boolean> {
    await this.opened();
    const lock = this.engine.dialect === "postgres" ? " FOR UPDATE" : "";
    return this.engine.transaction(async (tx) => {
      const rows = await tx.query(`SELECT ${COLUMNS} FROM webhooks WHERE id = ? AND lease_instance = ?${lock}`, [
        id,
        instance,
      ]);
      if (!rows[0]) return false;
      const { lease: _lease, ...rest } = eventFromRow(rows[0]);
      const next: WebhookEvent = { ...rest, ...update };
      await tx.run(
        `UPDATE webhooks SET state = ?, next_attempt_at = ?, lease_instance = NULL, lease_until = NULL, event = ? WHERE id = ?`,
        [next.state, next.nextAttemptAt, eventJson(next), id],
      );
      return true;
    });
  }

  /** The tenant's events, newest first, keyset-paginated on (createdAt, id). */
  async list(query: WebhookEventQuery): Promise<WebhookEventPage> {
    const size = webhookPageSize(query.pageSize);
    const cursor = query.pageToken ? parseWebhookCursor(query.pageToken) : undefined;
    await this.opened();
    const where = ["tenant = ?"];
    const params: SqlValue[] = [query.tenant];
    if (query.state) {
      where.push("state = ?");
      params.push(query.state);
    }
    if (cursor) {
      where.push("(created_at < ? OR (created_at = ? AND id < ?))");
      params.push(cursor.createdAt, cursor.createdAt, cursor.id);
    }
    const rows = await this.engine.reader.query(
      `SELECT ${COLUMNS} FROM webhooks WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...params, size + 1],
    );
    const events = rows.slice(0, size).map(eventFromRow);
    return rows.length > size ? { events, nextPageToken: webhookCursor(events.at(-1)!) } : { events };
  }

  /** The event, or undefined. */
  async get(id: string): Promise<WebhookEvent | undefined> {
    await this.opened();
    const rows = await this.engine.reader.query(`SELECT ${COLUMNS} FROM webhooks WHERE id = ?`, [id]);
    return rows[0] ? eventFromRow(rows[0]) : undefined;
  }

  /** Removes delivered and failed events created before `before`. */
  async prune(before: number): Promise<number> {
    await this.opened();
    return this.engine.transaction((tx) =>
      tx.run(`DELETE FROM webhooks WHERE state <> 'pending' AND created_at < ?`, [before]),
    );
  }

  /** The oldest pending event's createdAt. */
  async oldestPending(): Promise<number | undefined> {
    await this.opened();
    const rows = await this.engine.reader.query(
      `SELECT MIN(created_at) AS oldest FROM webhooks WHERE state = 'pending'`,
    );
    const oldest = rows[0]?.oldest;
    return oldest === null || oldest === undefined ? undefined : Number(oldest);
  }
}
