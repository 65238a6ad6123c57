import { MemoryWebhookOutbox } from "./memory-webhook-outbox.js";
import type { WebhookOutbox } from "./webhook-outbox.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "./chunk-log.js";
import { deepFreeze } from "./ledger/frozen-value.js";
import { checkNow } from "./chunk-arguments.js";
import { MemoryChunkLogs } from "./memory-chunk-log.js";
import { MemoryToolJournal } from "./memory-tool-journal.js";
import type { JournaledToolCall, ToolJournalScope, ToolResultJournal } from "./tool-result-journal.js";
import { walkChain } from "./ledger/state-chain.js";
import { checkLeasedHeadsLimit, earliestLeases } from "./leased-heads.js";
import { headsAfter } from "./head-scan.js";
import { keepIdentity, headToStore } from "./record-identity.js";
import { checkSessionQuery, isExpired, pageOfHeads } from "./session-query.js";
import { compareNewestFirst, pageOf } from "./snapshot-order.js";
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
} from "./snapshot-store.js";
import type { SnapshotStatus } from "../src/types/snapshot.js";
import { AgentError } from "../src/errors/agent-error.js";
import { StatusChannel } from "./status-channel.js";
import { StatusSubscribers } from "./status-subscribers.js";

interface StoredRecord<S> {
  record: SnapshotRecord<S>;
  version: number;
}

/**
 * A session store held in this process's memory: for tests, demos and
 * single-process servers that need no durability.
 *
 * Guarantees: heads and records are stored deep-frozen and handed out as they
 * are (no copies: a record shares the frozen messages of the turn that wrote
 * them, so a turn costs the size of what it changed); `commit` is a
 * compare-and-set on the head version and `updateRecord` an atomic rewrite
 * (JavaScript runs each synchronously); status subscribers get the current
 * status, then every change in order, without duplicates. Data is lost when
 * the process exits. The call context is ignored (one namespace; `listHeads`
 * scopes by the query's owner). Nothing expires by itself: the owner calls
 * `sweepExpired` (e.g. on a timer). The chunk logs of detached work are
 * kept per session (see `MemoryChunkLogs`) and go with their session, or
 * with `sweepChunks` once their keep-until time has passed.
 */
export class InMemorySessionStore<S = unknown>
  implements SessionStore<S>, SnapshotSubscriber, ChunkLog, ToolResultJournal
{
  private readonly heads = new Map<string, SessionHead>();
  private readonly records = new Map<string, StoredRecord<S>>();
  private readonly bySession = new Map<string, SnapshotRecord<S>[]>();
  private readonly subscribers = new StatusSubscribers();
  private readonly chunkLogs = new MemoryChunkLogs();
  private readonly webhooks = new MemoryWebhookOutbox();
  private readonly toolJournal = new MemoryToolJournal();

  /** The webhook outbox of this process (see `WebhookOutbox`; lost with the process, like the sessions). */
  webhookOutbox(): WebhookOutbox {
    return this.webhooks;
  }

  /** The session's head (frozen), or undefined. */
  async getHead(sessionId: string, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    return this.heads.get(sessionId);
  }

  /** Compare-and-set of the head, inserting the record first. */
  async commit(commit: HeadCommit<S>, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const next = headToStore(commit);
    const current = this.heads.get(next.sessionId);
    if ((current?.version ?? 0) !== commit.expectedVersion) return undefined;
    const record = commit.record;
    if (record) {
      if (this.records.has(record.snapshotId)) {
        throw new AgentError(
          "ALREADY_EXISTS",
          `snapshot ${record.snapshotId} already exists; a commit needs a new snapshot ID`,
        );
      }
      const frozen = deepFreeze(record);
      this.records.set(record.snapshotId, { record: frozen, version: 1 });
      let list = this.bySession.get(record.sessionId);
      if (!list) this.bySession.set(record.sessionId, (list = []));
      list.push(frozen);
      this.subscribers.deliver(record.snapshotId, { status: frozen.status, version: 1 });
    }
    const head = deepFreeze(next);
    this.heads.set(head.sessionId, head);
    return head;
  }

  /** The record (frozen), or undefined. */
  async getRecord(snapshotId: string, _ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined> {
    return this.records.get(snapshotId)?.record;
  }

  /** The chain from the nearest checkpoint, by parent links. */
  async getChain(snapshotId: string, _ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined> {
    return walkChain(async (id) => this.records.get(id)?.record, snapshotId);
  }

  /** The session's records newest first, paginated with opaque tokens. */
  async listRecords(sessionId: string, page?: SnapshotPageRequest, _ctx?: StoreCallContext): Promise<RecordPage<S>> {
    const sorted = [...(this.bySession.get(sessionId) ?? [])].sort(compareNewestFirst);
    const { items, nextPageToken } = pageOf(sorted, page);
    return nextPageToken ? { records: items, nextPageToken } : { records: items };
  }

  /** Atomic rewrite of one record. */
  async updateRecord(
    snapshotId: string,
    mutator: RecordMutator<S>,
    _ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null> {
    const stored = this.records.get(snapshotId);
    if (!stored) return null;
    const result = mutator(stored.record);
    if (result === null) return null;
    const record = deepFreeze(keepIdentity(result, stored.record));
    const version = stored.version + 1;
    this.records.set(snapshotId, { record, version });
    const list = this.bySession.get(record.sessionId)!;
    list[list.indexOf(stored.record)] = record;
    this.subscribers.deliver(snapshotId, { status: record.status, version });
    return record;
  }

  /** Current status (if the record exists), then every change, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const channel: StatusChannel = new StatusChannel(signal, () => this.subscribers.remove(snapshotId, channel));
    if (!channel.isClosed) {
      this.subscribers.add(snapshotId, channel);
      const stored = this.records.get(snapshotId);
      if (stored) channel.push({ status: stored.record.status, version: stored.version });
    }
    return channel;
  }

  /**
   * The owner's sessions, newest updated first, keyset-paginated (see
   * `SessionStore.listHeads`). Scans every head: O(sessions log sessions)
   * per page.
   */
  async listHeads(query: SessionQuery, _ctx?: StoreCallContext): Promise<HeadPage> {
    return pageOfHeads(this.heads.values(), checkSessionQuery(query));
  }

  /**
   * Removes the head, every record and every chunk log of the session (its
   * entries in every map) in one synchronous step. Open status subscriptions of its snapshots
   * stay open (their owners end them) but see no further change. Resolves
   * true when something was removed.
   */
  async deleteSession(sessionId: string, _ctx?: StoreCallContext): Promise<boolean> {
    return this.removeSession(sessionId);
  }

  /**
   * Every head that carries a lease (valid or lapsed; also an expired head not
   * yet swept, as `getHead` returns it), the earliest `lease.expiresAt` first
   * (ties: sessionId ascending), at most `limit` (an integer >= 1, otherwise
   * INVALID_ARGUMENT). The context is ignored (one namespace). Scans every
   * head: O(sessions) plus a sort of the leased ones.
   */
  async listLeasedHeads(limit: number, _ctx?: StoreCallContext): Promise<SessionHead[]> {
    checkLeasedHeadsLimit(limit);
    return earliestLeases(this.heads.values(), limit);
  }

  /**
   * Every head (expired ones not yet swept included), sessionId ascending,
   * after `afterSessionId`, at most `limit` (see `SessionStore.scanHeads`).
   * Scans and sorts every head: O(sessions log sessions) per call.
   */
  async scanHeads(afterSessionId: string | undefined, limit: number, _ctx?: StoreCallContext): Promise<SessionHead[]> {
    return headsAfter(this.heads.values(), afterSessionId, limit);
  }

  /** Deletes every session whose expiresAt <= now, each after `beforeExpire` (see `SessionStore.sweepExpired`); resolves to how many. */
  async sweepExpired(now: number, _ctx?: StoreCallContext, beforeExpire?: ExpireHook): Promise<number> {
    checkNow(now, "sweepExpired");
    let removed = 0;
    for (const head of [...this.heads.values()]) {
      if (!isExpired(head, now)) continue;
      if (beforeExpire) await beforeExpire(head);
      const current = this.heads.get(head.sessionId);
      if (current && !isExpired(current, now)) continue; // written meanwhile: it stays
      if (this.removeSession(head.sessionId)) removed++;
    }
    return removed;
  }

  private removeSession(sessionId: string): boolean {
    const hadHead = this.heads.delete(sessionId);
    const list = this.bySession.get(sessionId) ?? [];
    this.bySession.delete(sessionId);
    for (const record of list) this.records.delete(record.snapshotId);
    const hadLogs = this.chunkLogs.removeSession(sessionId);
    this.toolJournal.removeSession(sessionId);
    return hadHead || list.length > 0 || hadLogs;
  }

  /** Records a tool call of an uncommitted turn (see `ToolResultJournal.recordToolCall`). */
  async recordToolCall(scope: ToolJournalScope, call: JournaledToolCall, _ctx?: StoreCallContext): Promise<void> {
    this.toolJournal.record(scope, call);
  }

  /** The calls journaled under `scope` (see `ToolResultJournal.journaledToolCalls`). */
  async journaledToolCalls(scope: ToolJournalScope, _ctx?: StoreCallContext): Promise<JournaledToolCall[]> {
    return this.toolJournal.list(scope);
  }

  /** Removes the scope's journal (see `ToolResultJournal.dropToolCalls`). */
  async dropToolCalls(scope: ToolJournalScope, _ctx?: StoreCallContext): Promise<void> {
    this.toolJournal.drop(scope);
  }

  /** Appends to the log in memory (see `ChunkLog.appendChunks`); watchers wake at once. */
  appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<void> {
    return this.chunkLogs.appendChunks(key, chunks, keepUntil, ctx);
  }

  /** The log's chunks after `afterSequence`, at most `limit` (see `ChunkLog.readChunks`). */
  readChunks(key: ChunkLogKey, afterSequence: number, limit: number, ctx?: StoreCallContext): Promise<StoredChunk[]> {
    return this.chunkLogs.readChunks(key, afterSequence, limit, ctx);
  }

  /** Whether the log exists (see `ChunkLog.hasChunks`). */
  hasChunks(key: ChunkLogKey, ctx?: StoreCallContext): Promise<boolean> {
    return this.chunkLogs.hasChunks(key, ctx);
  }

  /** Sets the log's keep-until time (see `ChunkLog.keepChunks`). */
  keepChunks(key: ChunkLogKey, keepUntil: number, ctx?: StoreCallContext): Promise<void> {
    return this.chunkLogs.keepChunks(key, keepUntil, ctx);
  }

  /** Wakes for each later append (see `ChunkLog.watchChunks`). */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<void> {
    return this.chunkLogs.watchChunks(key, signal, ctx);
  }

  /** Removes the logs whose keep-until time is ≤ `now` (see `ChunkLog.sweepChunks`). */
  sweepChunks(now: number, ctx?: StoreCallContext): Promise<number> {
    return this.chunkLogs.sweepChunks(now, ctx);
  }

  /**
   * How many entries each internal map holds (for tests and diagnostics):
   * heads, records, per-session record lists, snapshot IDs with a live
   * status subscription, and chunk logs.
   */
  sizes(): {
    heads: number;
    records: number;
    sessions: number;
    subscribedSnapshots: number;
    chunkLogs: number;
    toolJournals: number;
  } {
    return {
      heads: this.heads.size,
      records: this.records.size,
      sessions: this.bySession.size,
      subscribedSnapshots: [...this.subscribers.ids()].length,
      chunkLogs: this.chunkLogs.logCount,
      toolJournals: this.toolJournal.sessionCount,
    };
  }

  /** Number of open `watchChunks` iterables (for tests and diagnostics). */
  get chunkWatcherCount(): number {
    return this.chunkLogs.watcherCount;
  }

  /** Number of live status subscriptions (for tests and diagnostics). */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Health probe: an in-memory store is always available. */
  async ping(): Promise<void> {}

  /** Ends every subscription and chunk watcher. The data stays readable. Idempotent. */
  async close(): Promise<void> {
    this.subscribers.closeAll();
    this.chunkLogs.closeAll();
  }
}
