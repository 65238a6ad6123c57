import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "../chunk-log.js";
import { chainFrom } from "../ledger/state-chain.js";
import { keepIdentity } from "../record-identity.js";
import { decodePageToken, encodePageToken, pageSizeOf } from "../snapshot-order.js";
import type {
  ExpireHook,
  HeadCommit,
  HeadPage,
  RecordMutator,
  RecordPage,
  SessionHead,
  SessionQuery,
  SessionStore,
  SnapshotPageRequest,
  SnapshotRecord,
  SnapshotSubscriber,
  StoreCallContext,
} from "../snapshot-store.js";
import type { WebhookOutbox, WebhookOutboxStore } from "../webhook-outbox.js";
import { SqlChangeFeed } from "./sql-change-feed.js";
import { SqlChunkLogs } from "./sql-chunk-logs.js";
import type { SqlEngine, SqlValue } from "./sql-engine.js";
import { migrateSchema } from "./sql-migrations.js";
import { headFromRow, recordFromRow, recordValues, requestsColumn } from "./sql-rows.js";
import { commitHead } from "./sql-head-commit.js";
import { KnownRequests } from "./sql-request-rows.js";
import { SqlSessionLifecycle } from "./sql-session-lifecycle.js";
import { SqlToolJournal } from "./sql-tool-journal.js";
import type { JournaledToolCall, ToolJournalScope, ToolResultJournal } from "../tool-result-journal.js";
import { SqlWebhookOutbox } from "./sql-webhook-outbox.js";

const META_COLUMNS = "snapshot_id, meta";
const STATE_COLUMNS = "snapshot_id, meta, checkpoint, delta";

/**
 * The session store on an SQL database: SQLite (`SqliteEngine`, the
 * embedded default) or PostgreSQL (`PostgresEngine`), one implementation.
 *
 * Guarantees: every write is one transaction of its engine — a commit
 * writes the head's compare-and-set (`UPDATE … WHERE version = expected`,
 * or an insert that must not find the session), its record and its
 * request-ID entries together, so there are no pending marks and nothing to
 * sweep after a crash; `updateRecord` reads and rewrites the record in one
 * transaction (row-locked on PostgreSQL); a call resolves only once its
 * transaction is durable. Request IDs live in their own table keyed by
 * (session, request ID): a turn adds its entry and drops the ones past the
 * window, the head row holds no list. Status changes and chunk appends
 * reach subscribers in this process at once and in other processes by the
 * engine's change feed. The schema is created and migrated at open
 * (`ready`). One namespace: the call context is ignored (the runtime checks
 * owners).
 */
export class SqlSessionStore<S = unknown>
  implements SessionStore<S>, SnapshotSubscriber, ChunkLog, WebhookOutboxStore, ToolResultJournal
{
  private readonly feed: SqlChangeFeed;
  private readonly logs: SqlChunkLogs;
  private readonly lifecycle: SqlSessionLifecycle;
  private readonly outbox: SqlWebhookOutbox;
  private readonly toolJournal: SqlToolJournal;
  private readonly knownRequests = new KnownRequests();
  private migrated: Promise<void> | undefined;
  private closed = false;

  constructor(readonly engine: SqlEngine) {
    const opened = (): Promise<void> => this.open();
    this.feed = new SqlChangeFeed(
      engine,
      (ids) => this.readStatuses(ids),
      (keys) => this.logs.lastSequences(keys),
    );
    this.logs = new SqlChunkLogs(engine, this.feed, opened);
    this.lifecycle = new SqlSessionLifecycle(engine, opened);
    this.outbox = new SqlWebhookOutbox(engine, opened);
    this.toolJournal = new SqlToolJournal(engine, opened);
  }

  /** Creates or migrates the schema (once; every operation waits for it). */
  private open(): Promise<void> {
    if (this.closed) return Promise.reject(new AgentError("UNAVAILABLE", `store ${this.engine.description} is closed`));
    this.migrated ??= (async () => {
      await this.engine.prepare?.();
      await migrateSchema(this.engine);
    })();
    return this.migrated;
  }

  /** Opens the database and brings its schema up to date now. */
  async ready(): Promise<void> {
    await this.open();
  }

  /** The webhook outbox kept in the same database. */
  webhookOutbox(): WebhookOutbox {
    return this.outbox;
  }

  /** The session's head (with its committed request IDs), or undefined. */
  async getHead(sessionId: string, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    await this.open();
    const rows = await this.engine.reader.query(
      `SELECT h.session_id, h.head, ${requestsColumn(this.engine.dialect, "h.session_id")} FROM heads h WHERE h.session_id = ?`,
      [sessionId],
    );
    return rows[0] ? this.remembered(headFromRow(rows[0])) : undefined;
  }

  /** The head of the session holding `snapshotId`: one query whatever the ID. */
  async headOfRecord(snapshotId: string, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    await this.open();
    const rows = await this.engine.reader.query(
      `SELECT h.session_id, h.head, ${requestsColumn(this.engine.dialect, "h.session_id")} FROM records r
       JOIN heads h ON h.session_id = r.session_id WHERE r.snapshot_id = ?`,
      [snapshotId],
    );
    return rows[0] ? this.remembered(headFromRow(rows[0])) : undefined;
  }

  /** `head` (read with its request rows in one statement), remembered for the next commit. */
  private remembered(head: SessionHead): SessionHead {
    this.knownRequests.remember(head);
    return head;
  }

  /**
   * The head's compare-and-set, its record and its request-ID entries in one
   * transaction (see sql-head-commit.ts: one message to SQLite's writer when
   * this store knows the session's request rows at `expectedVersion`).
   */
  async commit(commit: HeadCommit<S>, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    await this.open();
    const head = await commitHead(this.engine, this.knownRequests, commit);
    if (head && commit.record) this.feed.status(commit.record.snapshotId, commit.record.status, 1);
    return head;
  }

  /** The record, or undefined. */
  async getRecord(snapshotId: string, _ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined> {
    await this.open();
    const rows = await this.engine.reader.query(`SELECT ${STATE_COLUMNS} FROM records WHERE snapshot_id = ?`, [
      snapshotId,
    ]);
    return rows[0] ? recordFromRow<S>(rows[0]) : undefined;
  }

  /** The chain from the nearest checkpoint: the target, then one range query over its session's turns. */
  async getChain(snapshotId: string, _ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined> {
    const target = await this.getRecord(snapshotId);
    if (!target) return undefined;
    if (target.checkpoint || !target.delta) return [target];
    const rows = await this.engine.reader.query(
      `SELECT ${STATE_COLUMNS} FROM records WHERE session_id = ? AND turn_index >= ? AND turn_index < ?`,
      [target.sessionId, target.checkpointTurn, target.turnIndex],
    );
    return chainFrom([target, ...rows.map((r) => recordFromRow<S>(r))], snapshotId);
  }

  /** The session's records, newest first, keyset-paginated on (createdAt, snapshotId). */
  async listRecords(sessionId: string, page?: SnapshotPageRequest, _ctx?: StoreCallContext): Promise<RecordPage<S>> {
    const size = pageSizeOf(page);
    const after = page?.pageToken ? decodePageToken(page.pageToken) : undefined;
    await this.open();
    const params: SqlValue[] = [sessionId];
    let where = "session_id = ?";
    if (after) {
      where += " AND (created_at < ? OR (created_at = ? AND snapshot_id < ?))";
      params.push(after.createdAt, after.createdAt, after.snapshotId);
    }
    const columns = page?.includeState === false ? META_COLUMNS : STATE_COLUMNS;
    const rows = await this.engine.reader.query(
      `SELECT ${columns} FROM records WHERE ${where} ORDER BY created_at DESC, snapshot_id DESC LIMIT ?`,
      [...params, size + 1],
    );
    const records = rows.slice(0, size).map((r) => recordFromRow<S>(r));
    return rows.length > size ? { records, nextPageToken: encodePageToken(records[records.length - 1]!) } : { records };
  }

  /** Reads, mutates and rewrites the record in one transaction (row-locked on PostgreSQL). */
  async updateRecord(
    snapshotId: string,
    mutator: RecordMutator<S>,
    _ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null> {
    await this.open();
    const lock = this.engine.dialect === "postgres" ? " FOR UPDATE" : "";
    const updated = await this.engine.transaction(async (tx) => {
      const rows = await tx.query(`SELECT ${STATE_COLUMNS}, version FROM records WHERE snapshot_id = ?${lock}`, [
        snapshotId,
      ]);
      if (!rows[0]) return null;
      const existing = recordFromRow<S>(rows[0]);
      const result = mutator(existing);
      if (result === null) return null;
      const record = keepIdentity(result, existing);
      const version = Number(rows[0].version) + 1;
      const values = recordValues(record, version);
      tx.write(
        `UPDATE records SET turn_index = ?, status = ?, version = ?, meta = ?, checkpoint = ?, delta = ? WHERE snapshot_id = ?`,
        [...values.slice(3), snapshotId],
      );
      if (record.status !== existing.status)
        await tx.announce({ kind: "status", snapshotId, status: record.status, version });
      return { record, version };
    });
    if (!updated) return null;
    this.feed.status(snapshotId, updated.record.status, updated.version);
    return updated.record;
  }

  /** The stored status (if the record exists), then every change from any process, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    return this.feed.subscribeStatus(snapshotId, signal);
  }

  private async readStatuses(ids: string[]): Promise<Map<string, { status: string; version: number }>> {
    await this.open();
    const found = new Map<string, { status: string; version: number }>();
    for (let start = 0; start < ids.length; start += 500) {
      const slice = ids.slice(start, start + 500);
      const rows = await this.engine.reader.query(
        `SELECT snapshot_id, status, version FROM records WHERE snapshot_id IN (${slice.map(() => "?").join(", ")})`,
        slice,
      );
      for (const r of rows) found.set(String(r.snapshot_id), { status: String(r.status), version: Number(r.version) });
    }
    return found;
  }

  /** See `SessionStore.listHeads`. */
  listHeads(query: SessionQuery, _ctx?: StoreCallContext): Promise<HeadPage> {
    return this.lifecycle.listHeads(query);
  }

  /** See `SessionStore.deleteSession`: one transaction removes every row of the session. */
  deleteSession(sessionId: string, _ctx?: StoreCallContext): Promise<boolean> {
    this.knownRequests.forget(sessionId);
    return this.lifecycle.deleteSession(sessionId);
  }

  /** See `SessionStore.scanHeads`: one range read on the primary key per page. */
  scanHeads(afterSessionId: string | undefined, limit: number, _ctx?: StoreCallContext): Promise<SessionHead[]> {
    return this.lifecycle.scanHeads(afterSessionId, limit);
  }

  /** See `SessionStore.listLeasedHeads`: one indexed query. */
  listLeasedHeads(limit: number, _ctx?: StoreCallContext): Promise<SessionHead[]> {
    return this.lifecycle.listLeasedHeads(limit);
  }

  /** See `SessionStore.sweepExpired`. */
  sweepExpired(now: number, _ctx?: StoreCallContext, beforeExpire?: ExpireHook): Promise<number> {
    return this.lifecycle.sweepExpired(now, beforeExpire);
  }

  /** See `ToolResultJournal.recordToolCall`: one transaction, durable when it resolves. */
  recordToolCall(scope: ToolJournalScope, call: JournaledToolCall, _ctx?: StoreCallContext): Promise<void> {
    return this.toolJournal.record(scope, call);
  }

  /** See `ToolResultJournal.journaledToolCalls`. */
  journaledToolCalls(scope: ToolJournalScope, _ctx?: StoreCallContext): Promise<JournaledToolCall[]> {
    return this.toolJournal.list(scope);
  }

  /** See `ToolResultJournal.dropToolCalls`. */
  dropToolCalls(scope: ToolJournalScope, _ctx?: StoreCallContext): Promise<void> {
    return this.toolJournal.drop(scope);
  }

  /** See `ChunkLog.appendChunks`: one transaction, durable when it resolves. */
  appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    _ctx?: StoreCallContext,
  ): Promise<void> {
    return this.logs.appendChunks(key, chunks, keepUntil);
  }

  /** A takeover's first chunk at the log's next free sequence, in one transaction; earlier runs' appends are refused from then on (see `ChunkLog.claimChunks`). */
  claimChunks(
    key: ChunkLogKey & { run: number },
    afterSequence: number,
    first: (sequence: number) => StoredChunk["chunk"],
    keepUntil: number,
    _ctx?: StoreCallContext,
  ): Promise<number> {
    return this.logs.claimChunks(key, afterSequence, first, keepUntil);
  }

  /** See `ChunkLog.readChunks`. */
  readChunks(key: ChunkLogKey, afterSequence: number, limit: number, _ctx?: StoreCallContext): Promise<StoredChunk[]> {
    return this.logs.readChunks(key, afterSequence, limit);
  }

  /** See `ChunkLog.hasChunks`. */
  hasChunks(key: ChunkLogKey, _ctx?: StoreCallContext): Promise<boolean> {
    return this.logs.hasChunks(key);
  }

  /** See `ChunkLog.keepChunks`. */
  keepChunks(key: ChunkLogKey, keepUntil: number, _ctx?: StoreCallContext): Promise<void> {
    return this.logs.keepChunks(key, keepUntil);
  }

  /** See `ChunkLog.watchChunks`. */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<void> {
    return this.logs.watchChunks(key, signal);
  }

  /** See `ChunkLog.sweepChunks`. */
  sweepChunks(now: number, _ctx?: StoreCallContext): Promise<number> {
    return this.logs.sweepChunks(now);
  }

  /** Live status subscriptions (for tests and diagnostics). */
  get subscriberCount(): number {
    return this.feed.subscriberCount;
  }

  /** Open chunk watchers (for tests and diagnostics). */
  get chunkWatcherCount(): number {
    return this.feed.watcherCount;
  }

  /** True when changes made from now on reach every open watcher (see `StoreUnderTest.watchersSettled`). */
  get watchersSettled(): boolean {
    return this.feed.settled;
  }

  /** Health probe: the database answers. */
  async ping(): Promise<void> {
    await this.engine.ping();
  }

  /** Ends subscriptions and watchers, then closes the engine. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.feed.closeAll();
    await this.migrated?.catch(() => {});
    await this.engine.close();
  }
}
