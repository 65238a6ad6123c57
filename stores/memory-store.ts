import type { SessionSnapshot, SnapshotStatus } from "../src/types/snapshot.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { assertValidSnapshotId, bindIdentity, newSnapshotId } from "./snapshot-identity.js";
import { compareNewestFirst, snapshotPageOf } from "./snapshot-order.js";
import type {
  SessionStore,
  SnapshotMutator,
  SnapshotPage,
  SnapshotPageRequest,
  SnapshotSubscriber,
  StoreCallContext,
} from "./snapshot-store.js";
import { StatusChannel } from "./status-channel.js";
import { StatusSubscribers } from "./status-subscribers.js";

interface StoredRow<S> {
  snapshot: SessionSnapshot<S>;
  version: number;
}

/**
 * A session store held in this process's memory: for tests, demos and
 * single-process servers that need no durability.
 *
 * Guarantees: every row goes in and comes out as a deep copy (structuredClone),
 * so callers can never alias stored state; `saveSnapshot` is serialised per
 * snapshot ID (no lost update); status subscribers get the current status, then
 * every change in order, without duplicates. Data is lost when the process
 * exits. The call context is ignored (one namespace).
 */
export class InMemorySessionStore<S = unknown> implements SessionStore<S>, SnapshotSubscriber {
  private readonly rows = new Map<string, StoredRow<S>>();
  private readonly bySession = new Map<string, Set<string>>();
  private readonly mutex = new KeyedMutex();
  private readonly subscribers = new StatusSubscribers();

  /** Deep copy of the row, or undefined. */
  async getSnapshot(snapshotId: string, _ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined> {
    const row = this.rows.get(snapshotId);
    return row ? structuredClone(row.snapshot) : undefined;
  }

  /** Deep copy of the session's newest row (greatest createdAt, then greatest snapshotId). */
  async getLatestSnapshot(sessionId: string, _ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined> {
    let best: SessionSnapshot<S> | undefined;
    for (const id of this.bySession.get(sessionId) ?? []) {
      const snap = this.rows.get(id)!.snapshot;
      if (!best || compareNewestFirst(snap, best) < 0) best = snap;
    }
    return best ? structuredClone(best) : undefined;
  }

  /** The session's rows newest first, paginated with opaque tokens. */
  async listSnapshots(sessionId: string, page?: SnapshotPageRequest, _ctx?: StoreCallContext): Promise<SnapshotPage<S>> {
    const all = [...(this.bySession.get(sessionId) ?? [])].map((id) => this.rows.get(id)!.snapshot).sort(compareNewestFirst);
    const result = snapshotPageOf(all, page);
    return { ...result, snapshots: result.snapshots.map((s) => structuredClone(s)) };
  }

  /** Atomic read→mutate→write, serialised per snapshot ID. */
  async saveSnapshot(
    snapshotId: string | undefined,
    mutator: SnapshotMutator<S>,
    _ctx?: StoreCallContext,
  ): Promise<SessionSnapshot<S> | null> {
    const id = snapshotId ?? newSnapshotId();
    assertValidSnapshotId(id);
    return this.mutex.run(id, async () => {
      const existing = this.rows.get(id);
      const result = await mutator(existing ? structuredClone(existing.snapshot) : undefined);
      if (result === null) return null;
      const row = structuredClone(bindIdentity(result, id, existing?.snapshot));
      const version = (existing?.version ?? 0) + 1;
      this.rows.set(id, { snapshot: row, version });
      let ids = this.bySession.get(row.sessionId);
      if (!ids) this.bySession.set(row.sessionId, (ids = new Set()));
      ids.add(id);
      this.subscribers.deliver(id, { status: row.status, version });
      return structuredClone(row);
    });
  }

  /** Current status (if the row exists), then every change, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const channel: StatusChannel = new StatusChannel(signal, () => this.subscribers.remove(snapshotId, channel));
    if (!channel.isClosed) {
      this.subscribers.add(snapshotId, channel);
      const row = this.rows.get(snapshotId);
      if (row) channel.push({ status: row.snapshot.status, version: row.version });
    }
    return channel;
  }

  /** Number of live status subscriptions (for tests and diagnostics). */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Ends every subscription. The data stays readable. Idempotent. */
  async close(): Promise<void> {
    this.subscribers.closeAll();
  }
}
