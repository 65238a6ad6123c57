import { MongoWebhookOutbox } from "./webhook-outbox.js";
import type { WebhookOutbox } from "../webhook-outbox.js";
import { MongoClient, type Db } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { checkNow } from "../chunk-arguments.js";
import type { ChunkLog } from "../chunk-log.js";
import { checkLeasedHeadsLimit } from "../leased-heads.js";
import type {
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
  ExpireHook,
} from "../snapshot-store.js";
import { StatusChannel } from "../status-channel.js";
import { changeStreamsUnsupported } from "./change-stream-support.js";
import { ChunkCollection } from "./chunk-collection.js";
import { MongoChunkLogs } from "./store-chunk-logs.js";
import type { OutcomeProbe } from "./commit-outcome.js";
import { CommitSettlement } from "./commit-settlement.js";
import { HeadWriteCache } from "./head-write-cache.js";
import { commitHead } from "./head-commit.js";
import { fromHeadDocument, LIVE_HEAD, WITHOUT_TOKENS } from "./head-document.js";
import { scanHeadDocuments } from "./head-scan.js";
import { acrossFailover, type FailoverBudget } from "./failover-retry.js";
import { StreamHealth } from "./stream-health.js";
import { guarded } from "./mongo-errors.js";
import { DEFAULT_FAILOVER_WINDOW_MS, updateRecordDocument } from "./record-update.js";
import { watchReconnects } from "./reconnect-watch.js";
import {
  DEFAULT_ORPHAN_GRACE_MS,
  DEFAULT_ORPHAN_SCAN_BATCH,
  listHeadsPage,
  listLeasedHeadDocuments,
  removeSession,
  sweepExpiredSessions,
  type OrphanScan,
} from "./session-lifecycle.js";
import { ChangeStreamMultiplexer, recordStatusReader, type StreamEndingReport } from "./status-stream.js";
import type { MongoSessionStoreConfig } from "./store-config.js";
import { openCollections, storeConnection, type OpenedStore } from "./store-connection.js";
import { ToolCallCollection } from "./tool-call-collection.js";
import type { JournaledToolCall, ToolJournalScope, ToolResultJournal } from "../tool-result-journal.js";

export { clientOptionsFor } from "./connection-settings.js";
export type { MongoSessionStoreConfig };

/**
 * The session ledger in MongoDB, for many agentd instances sharing one
 * replica set; no transactions. Collections (all `<prefix>…`): `heads`
 * (`_id = sessionId`, compare-and-set on `version`), `snapshots` (one record
 * per snapshot, `_id = snapshotId`, with a per-record `version` for
 * `updateRecord`'s optimistic read-modify-write), `checkpoint_chunks` (a
 * checkpoint over 8 MiB, split so no document nears the 16 MiB limit however
 * long a conversation grows) and `store_meta` (the store format, checked at
 * first use), and `stream_chunks` (the chunk logs of detached work, see
 * ChunkCollection). `commit` inserts the record, then moves the head; when the
 * head moved meanwhile it deletes the record again and resolves undefined.
 *
 * Session lifecycle (session-lifecycle.ts): `listHeads` walks the
 * `{owner, updatedAt: -1, _id: -1}` index with keyset page tokens;
 * `listLeasedHeads` reads the sparse `{"lease.expiresAt": 1}` index;
 * `deleteSession` hides the head behind a deletion marker, then deletes the
 * records, the chunks, the chunk logs and the marker; a TTL index on the heads' `expireAt`
 * lets MongoDB remove expired heads by itself, and `sweepExpired` deletes
 * expired sessions whole plus, in bounded round-robin steps, the records and
 * chunks of sessions whose head the TTL monitor removed first.
 *
 * Consistency (see consistency.ts): writes with `w: "majority"`, journaled;
 * reads from the primary with read concern `majority`. An acknowledged turn
 * survives failover, and any read sees every write acknowledged before it.
 * Only an explicit URI option weakens this, and the store then reports it in
 * {@link MongoSessionStore.warnings} (and to `logger`).
 *
 * Status subscriptions share ONE change stream per store instance, filtered
 * on the server to status transitions (see STATUS_PIPELINE), so an instance's
 * traffic grows with status changes, not with turns; the stream is reopened
 * however it ends (see ChangeStreamMultiplexer). The first use fails
 * FAILED_PRECONDITION on a deployment without change streams.
 */
export class MongoSessionStore<S = unknown>
  extends MongoChunkLogs
  implements SessionStore<S>, SnapshotSubscriber, ChunkLog, ToolResultJournal
{
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly db: Db;
  private opening: Promise<OpenedStore<S>> | undefined;
  private readonly statusStream: ChangeStreamMultiplexer;
  private readonly stopWatchingReconnects: () => void;
  private closed = false;
  private readonly orphanScan: OrphanScan;
  protected readonly chunkLogs: ChunkCollection;
  private readonly toolJournal = new ToolCallCollection(async () => (await this.open()).c.toolCalls);
  private webhooks: MongoWebhookOutbox | undefined;
  /** Clears the pending marks of landed commits (close() lets those in flight land). */
  private readonly settlement: CommitSettlement;
  /** This store's last head write per session: the next one sends only what changed. */
  private readonly headWrites = new HeadWriteCache();
  /** Change streams that failed for good: ping fails with their error until a probe opens one again. */
  private readonly streamHealth = new StreamHealth();
  /**
   * One line per consistency setting of the URI (or the given client) that is
   * weaker than the store's default (w other than majority, journal=false,
   * readConcernLevel local/available, a readPreference other than primary);
   * empty when none. Computed at construction and also sent to `logger`.
   */
  readonly warnings: readonly string[];

  /** Fails INVALID_ARGUMENT without `uri` or `client`, or when the URI sets unacknowledged writes (w=0). */
  constructor(private readonly config: MongoSessionStoreConfig) {
    super();
    ({
      client: this.client,
      ownsClient: this.ownsClient,
      db: this.db,
      warnings: this.warnings,
    } = storeConnection(config));
    const records = async () => (await this.open()).c.records;
    this.statusStream = new ChangeStreamMultiplexer(
      records,
      recordStatusReader(this.client, records),
      config.logger,
      this.streamHealth,
    );
    this.orphanScan = {
      batch: config.orphanScanBatch ?? DEFAULT_ORPHAN_SCAN_BATCH,
      graceMs: config.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS,
    };
    this.chunkLogs = new ChunkCollection({
      collection: async () => (await this.open()).c.streamChunks,
      client: this.client,
      unsupported: (err) => changeStreamsUnsupported(this.db, (err as Error).message, err),
      ...(config.logger ? { logger: config.logger } : {}),
    });
    // openOnce, not open: close() flushes the settled tokens after the store counts as closed.
    this.settlement = new CommitSettlement(
      async () => (await this.openOnce()).c,
      () => this.closed,
    );
    this.stopWatchingReconnects = watchReconnects(this.client, (lostAt) =>
      this.statusStream.requestReopen("the connection to the primary was lost and is back", lostAt),
    );
  }

  /**
   * The collections, format-checked and indexed once (retried on the next
   * call if that failed, and across an election within the call).
   */
  private open(): Promise<OpenedStore<S>> {
    if (this.closed)
      return Promise.reject(new AgentError("FAILED_PRECONDITION", "the MongoDB session store is closed"));
    return acrossFailover(
      "opening the session store (checking its format, indexes and change-stream support)",
      this.budget(),
      () => this.openOnce(),
    );
  }

  /** One attempt at preparing the collections, shared by concurrent callers; forgotten when it fails. */
  private openOnce(): Promise<OpenedStore<S>> {
    if (!this.opening) {
      const attempt = openCollections<S>(this.client, this.db, this.config, (doc) => {
        if (doc.commitToken !== undefined) this.settlement.settle(doc.sessionId, doc._id, doc.commitToken);
      });
      this.opening = attempt;
      attempt.catch(() => {
        if (this.opening === attempt) this.opening = undefined;
      });
    }
    return this.opening;
  }

  /**
   * Connects and prepares the store now instead of at first use: checks the
   * store format, makes sure the indexes exist and that the deployment runs
   * change streams. Rejects with the AgentError the first operation would get
   * (FAILED_PRECONDITION for another format or a standalone mongod,
   * UNAVAILABLE while the server cannot be reached); a later call tries again.
   */
  async ready(): Promise<void> {
    await this.open();
  }

  /** The webhook outbox in `<prefix>webhook_outbox` (see `MongoWebhookOutbox`). */
  webhookOutbox(): WebhookOutbox {
    return (this.webhooks ??= new MongoWebhookOutbox(this.db, this.config.collectionPrefix ?? ""));
  }

  /** The driver client the store uses (diagnostics, command monitoring); closing it is the store's job. */
  get driverClient(): MongoClient {
    return this.client;
  }

  /** The database the store keeps its collections in. */
  get databaseName(): string {
    return this.db.databaseName;
  }

  /** True while the store's change stream is established on the server (tests, diagnostics). */
  get changeStreamOpen(): boolean {
    return this.statusStream.isOpen;
  }

  /** How often the change stream was reopened after it ended (error, invalidate, closed cursor, reconnect). */
  get changeStreamReopens(): number {
    return this.statusStream.reopens;
  }

  /** How the change stream last ended (reason, whether it resumed from its token, when), or undefined. */
  get changeStreamLastEnding(): StreamEndingReport | undefined {
    return this.statusStream.lastEnding;
  }

  /** Change-stream events the server delivered to this instance (only status transitions pass its filter). */
  get changeEventsReceived(): number {
    return this.statusStream.eventsReceived;
  }

  /**
   * The session's head, or undefined (also while the session is being
   * deleted). Like every read, retried across an election (failover-retry.ts).
   */
  async getHead(sessionId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const doc = await this.read(`reading session ${sessionId}`, ctx, ({ c }) =>
      c.heads.findOne({ _id: sessionId, ...LIVE_HEAD }, { projection: WITHOUT_TOKENS }),
    );
    return doc ? fromHeadDocument(doc) : undefined;
  }

  /**
   * Inserts the record (chunks first for a big checkpoint) marked `pending`,
   * then writes the head where its version is `expectedVersion`, then clears
   * the mark (without waiting for that third write); on a conflict deletes what it inserted and resolves undefined.
   * A write that fails with an error of unknown outcome (lost reply,
   * write-concern timeout, failover) is followed by reads of what is stored
   * (see commit-outcome.ts), retried through a failover for up to
   * `failoverWindowMs`: a commit whose head write landed resolves to the
   * head, one whose write did not land rejects with the original error
   * (UNAVAILABLE); its record stays pending, invisible to every read, until
   * the sweep deletes it. A commit that failed with a transient error is
   * repeated, same token, across an election (see failover-retry.ts) until
   * the failover window or the caller's `ctx.deadline`: a write of an
   * earlier attempt that landed is recognised by its token, never applied
   * twice. A record that cannot fit one document fails with
   * RESOURCE_EXHAUSTED before anything is written.
   */
  async commit(commit: HeadCommit<S>, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const { c, chunks } = await this.open();
    return commitHead(
      {
        c,
        chunks,
        settlement: this.settlement,
        headWrites: this.headWrites,
        delivered: (id, observation) => this.statusStream.deliver(id, observation),
        budget: this.budget(ctx),
      },
      commit,
    );
  }

  /**
   * How long a call retries across a failover (and probes an unknown
   * outcome): the failover window from now, or the caller's deadline when
   * that is sooner.
   */
  private budget(ctx?: StoreCallContext): FailoverBudget & OutcomeProbe {
    const window = Date.now() + (this.config.failoverWindowMs ?? DEFAULT_FAILOVER_WINDOW_MS);
    return { deadline: Math.min(window, ctx?.deadline ?? window), closed: () => this.closed };
  }

  /** One read of the opened store, retried across an election within the call's budget ({@link budget}). */
  private async read<T>(
    what: string,
    ctx: StoreCallContext | undefined,
    read: (opened: OpenedStore<S>) => Promise<T>,
  ): Promise<T> {
    const opened = await this.open();
    return acrossFailover(what, this.budget(ctx), () => read(opened));
  }

  /**
   * The head of the session holding `snapshotId`, without reading the
   * record's state: its session ID (a projected read), then that head. An
   * unknown ID makes the same two reads (the head of its own ID, ignored).
   */
  async headOfRecord(snapshotId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const sessionId = await this.read(`reading snapshot ${snapshotId}`, ctx, ({ reads }) =>
      reads.sessionIdOf(snapshotId),
    );
    const head = await this.getHead(sessionId ?? snapshotId, ctx);
    return sessionId === undefined ? undefined : head;
  }

  /** The record (checkpoint joined from its chunks), or undefined. */
  async getRecord(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined> {
    return (await this.read(`reading snapshot ${snapshotId}`, ctx, ({ reads }) => reads.load(snapshotId)))?.record;
  }

  /** The chain from the nearest checkpoint: the target, then one range query on (sessionId, turnIndex). */
  async getChain(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined> {
    return this.read(`reading the chain of snapshot ${snapshotId}`, ctx, ({ reads }) => reads.chain(snapshotId));
  }

  /** The session's records newest first, keyset-paginated. */
  async listRecords(sessionId: string, page?: SnapshotPageRequest, ctx?: StoreCallContext): Promise<RecordPage<S>> {
    return this.read(`listing the snapshots of session ${sessionId}`, ctx, ({ reads }) => reads.list(sessionId, page));
  }

  /**
   * Optimistic read → mutator → conditional `$set` of the changed fields on
   * the record's version, retried (with backoff) on a conflict. `status` is
   * set only when it changes: that is what status subscribers are sent.
   * Transient failures are retried for `failoverWindowMs` (default 30 s; the
   * caller's `ctx.deadline` when sooner), so the final write of a detached
   * run survives a replica-set failover.
   */
  async updateRecord(
    snapshotId: string,
    mutator: RecordMutator<S>,
    ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null> {
    const opened = await this.open();
    const budget = this.budget(ctx);
    return updateRecordDocument(
      {
        records: opened.c.records,
        chunks: opened.chunks,
        reads: opened.reads,
        maxConflictRetries: this.config.maxConflictRetries ?? 1000,
        failoverWindowMs: Math.max(0, budget.deadline - Date.now()),
        closed: () => this.closed,
        delivered: (id, observation) => this.statusStream.deliver(id, observation),
      },
      snapshotId,
      mutator,
    );
  }

  /** Current status (if the record exists), then every change from any instance, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const channel: StatusChannel = new StatusChannel(signal, () => this.statusStream.remove(snapshotId, channel));
    if (!channel.isClosed && !this.closed) this.statusStream.add(snapshotId, channel);
    return channel;
  }

  /**
   * The owner's sessions newest updatedAt first, keyset-paginated on
   * (updatedAt, sessionId) over the `{owner, updatedAt: -1, _id: -1}` index;
   * see listHeadsPage.
   */
  async listHeads(query: SessionQuery, ctx?: StoreCallContext): Promise<HeadPage> {
    return this.read("listing sessions", ctx, ({ c }) => listHeadsPage(c.heads, query));
  }

  /**
   * The heads carrying a lease (valid or lapsed), of every owner, the earliest
   * `lease.expiresAt` first (ties: sessionId ascending), at most `limit` (an
   * integer >= 1, otherwise INVALID_ARGUMENT): one query on the sparse
   * `{"lease.expiresAt": 1}` index; see listLeasedHeadDocuments. Heads being
   * deleted are left out, as getHead leaves them out. The context is ignored,
   * as by every other method (one set of collections for every owner).
   */
  async listLeasedHeads(limit: number, ctx?: StoreCallContext): Promise<SessionHead[]> {
    checkLeasedHeadsLimit(limit);
    return this.read("listing the leased sessions", ctx, ({ c }) => listLeasedHeadDocuments(c.heads, limit));
  }

  /** Every head of every owner, sessionId ascending, after `afterSessionId` (see `SessionStore.scanHeads`, scanHeadDocuments). */
  async scanHeads(afterSessionId: string | undefined, limit: number, ctx?: StoreCallContext): Promise<SessionHead[]> {
    return this.read("scanning the sessions", ctx, ({ c }) => scanHeadDocuments(c.heads, afterSessionId, limit));
  }

  /**
   * Deletes the head (first made a deletion marker, so no reader sees a head
   * whose records are going), every record and every checkpoint chunk of the
   * session; see removeSession. True when anything was there.
   */
  async deleteSession(sessionId: string, _ctx?: StoreCallContext): Promise<boolean> {
    const { c } = await this.open();
    return (await guarded(`deleting session ${sessionId}`, () => removeSession(c, sessionId))).removedAnything;
  }

  /**
   * Deletes every session whose head expired at `now` (as deleteSession), then
   * runs one bounded step of the orphan pass for sessions whose head MongoDB's
   * TTL index removed first; see sweepExpiredSessions.
   */
  async sweepExpired(now: number, _ctx?: StoreCallContext, beforeExpire?: ExpireHook): Promise<number> {
    checkNow(now, "sweepExpired");
    const { c } = await this.open();
    return guarded("sweeping expired sessions", () => sweepExpiredSessions(c, now, this.orphanScan, beforeExpire));
  }

  /** One upsert with the store's write concern (see `ToolResultJournal.recordToolCall`, `ToolCallCollection`). */
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

  /**
   * Health probe: a `ping` command to the server (bounded by the client's
   * server selection timeout). Rejects UNAVAILABLE while the server cannot be
   * reached, and while the status change stream has failed for good (see
   * StreamHealth) unless a probe stream opens now; FAILED_PRECONDITION once
   * the store is closed.
   */
  async ping(): Promise<void> {
    if (this.closed) throw new AgentError("FAILED_PRECONDITION", "the MongoDB session store is closed");
    await guarded("pinging the server", () => this.db.command({ ping: 1 }));
    const problem = this.streamHealth.problem;
    if (problem && !(await this.streamHealth.probeStatusStream(async () => (await this.open()).c.records)))
      throw problem;
  }

  /**
   * Ends subscriptions, closes the change stream, lets the commits' pending-mark
   * clears still in flight land, then closes the client (when the store
   * created it). Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    // Settled first, while the streams still run: a stream closed and then left waiting for a round trip
    // before the client closes can leave its server cursor open (mongodb-status-stream.test.ts counts them).
    if (!this.settlement.idle) await this.settlement.flush();
    this.statusStream.closeAll();
    this.chunkLogs.closeAll();
    this.stopWatchingReconnects();
    this.closed = true;
    if (!this.settlement.idle) await this.settlement.flush();
    if (this.ownsClient) await this.client.close();
  }
}
