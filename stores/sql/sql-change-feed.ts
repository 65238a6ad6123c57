import type { SnapshotStatus } from "../../src/types/snapshot.js";
import type { ChunkLogKey } from "../chunk-log.js";
import { StatusChannel } from "../status-channel.js";
import { StatusSubscribers } from "../status-subscribers.js";
import { WakeChannel } from "../wake-channel.js";
import type { SqlChange, SqlEngine } from "./sql-engine.js";

/** The stored status and version of each of `snapshotIds` that exists. */
export type StatusReader = (snapshotIds: string[]) => Promise<Map<string, { status: string; version: number }>>;
/** The last stored sequence of each watched chunk log that exists (absent: no log). */
export type LastSequenceReader = (keys: ChunkLogKey[]) => Promise<Map<string, number>>;

interface ChunkWatch {
  key: ChunkLogKey;
  channels: Set<WakeChannel>;
  /** The log's last sequence as last seen (undefined: not read yet). */
  lastSequence: number | undefined;
}

/** The map key of a chunk log. */
export const chunkWatchKey = (key: ChunkLogKey): string => `${key.sessionId}\0${key.snapshotId}`;

/**
 * Status subscribers and chunk watchers of one SQL store, fed by this
 * process's commits (at once) and by the engine's change feed (other
 * processes: PostgreSQL notifications, SQLite's polled change counter).
 * An `unknown` change (SQLite's counter moved, PostgreSQL's listener
 * reconnected) re-reads the status of every subscribed snapshot and the
 * last sequence of every watched log, so nothing is missed; each channel's
 * gate drops what it already delivered. The engine is followed only while
 * someone subscribes or watches.
 */
export class SqlChangeFeed {
  private readonly subscribers = new StatusSubscribers();
  private readonly watches = new Map<string, ChunkWatch>();
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private following = false;

  constructor(
    private readonly engine: SqlEngine,
    private readonly readStatuses: StatusReader,
    private readonly readLastSequences: LastSequenceReader,
  ) {}

  /** Live status subscriptions. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Open chunk watchers. */
  get watcherCount(): number {
    let n = 0;
    for (const w of this.watches.values()) n += w.channels.size;
    return n;
  }

  /** A subscription that first gets the stored status (read after it is registered, so no change falls between). */
  subscribeStatus(snapshotId: string, signal: AbortSignal): AsyncIterable<SnapshotStatus> {
    const channel: StatusChannel = new StatusChannel(signal, () => {
      this.subscribers.remove(snapshotId, channel);
      this.updateFollowing();
    });
    if (channel.isClosed) return channel;
    this.subscribers.add(snapshotId, channel);
    this.updateFollowing();
    this.readStatuses([snapshotId]).then(
      (found) => {
        const stored = found.get(snapshotId);
        if (stored) channel.push({ status: stored.status as SnapshotStatus, version: stored.version });
      },
      (err: Error) => channel.fail(err),
    );
    return channel;
  }

  /** A watcher woken by every later append to `key`'s log; `baseline` is the log's last sequence now, when known. */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, baseline?: number): AsyncIterable<void> {
    const id = chunkWatchKey(key);
    const channel: WakeChannel = new WakeChannel(signal, () => {
      const watch = this.watches.get(id);
      watch?.channels.delete(channel);
      if (watch?.channels.size === 0) this.watches.delete(id);
      this.updateFollowing();
    });
    if (channel.isClosed) return channel;
    let watch = this.watches.get(id);
    if (!watch) this.watches.set(id, (watch = { key, channels: new Set(), lastSequence: baseline }));
    watch.channels.add(channel);
    this.updateFollowing();
    return channel;
  }

  /** The log's last sequence as read when its watch began (kept only when nothing newer was seen meanwhile). */
  baseline(key: ChunkLogKey, lastSequence: number): void {
    const watch = this.watches.get(chunkWatchKey(key));
    if (watch && watch.lastSequence === undefined) watch.lastSequence = lastSequence;
  }

  /** A status this process committed (or was told of): delivered to the snapshot's subscribers. */
  status(snapshotId: string, status: string, version: number): void {
    this.subscribers.deliver(snapshotId, { status: status as SnapshotStatus, version });
  }

  /** Chunks this process appended (or was told of): wakes the log's watchers. */
  chunks(key: ChunkLogKey, lastSequence: number): void {
    const watch = this.watches.get(chunkWatchKey(key));
    if (!watch) return;
    if (watch.lastSequence !== undefined && lastSequence <= watch.lastSequence) return;
    watch.lastSequence = lastSequence;
    for (const channel of watch.channels) channel.wake();
  }

  /** Ends every subscription and watcher. */
  closeAll(): void {
    this.subscribers.closeAll();
    for (const watch of [...this.watches.values()]) for (const channel of [...watch.channels]) channel.close();
    this.engine.follow(undefined);
    this.following = false;
  }

  /** True when nothing is followed, or the engine's feed is active (changes from now on reach the followers). */
  get settled(): boolean {
    return (this.subscribers.isEmpty && this.watches.size === 0) || (this.following && this.engine.following);
  }

  private updateFollowing(): void {
    const wanted = !this.subscribers.isEmpty || this.watches.size > 0;
    if (wanted === this.following) return;
    this.following = wanted;
    this.engine.follow(wanted ? (change) => this.onChange(change) : undefined);
  }

  private onChange(change: SqlChange): void {
    if (change.kind === "status") this.status(change.snapshotId, change.status, change.version);
    else if (change.kind === "chunks")
      this.chunks({ sessionId: change.sessionId, snapshotId: change.snapshotId }, change.lastSequence);
    else void this.refresh();
  }

  /** Re-reads what is followed (coalesced: a refresh asked for during one runs once more after it). */
  private async refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          await this.refreshOnce();
        } catch {
          // the next change or poll tries again
        }
      } while (this.refreshAgain);
    })();
    await this.refreshing;
    this.refreshing = undefined;
  }

  private async refreshOnce(): Promise<void> {
    const ids = [...this.subscribers.ids()];
    if (ids.length > 0) {
      const found = await this.readStatuses(ids);
      for (const [id, stored] of found) this.status(id, stored.status, stored.version);
    }
    const watches = [...this.watches.values()];
    if (watches.length === 0) return;
    const seenBefore = watches.map((w) => w.lastSequence);
    const sequences = await this.readLastSequences(watches.map((w) => w.key));
    for (const [i, watch] of watches.entries()) {
      const last = sequences.get(chunkWatchKey(watch.key));
      if (last === undefined) {
        // No log (not yet appended to, or removed): a removal may wake; a log never seen stays quiet.
        // A sequence seen while the read ran (a notification) may be newer than the read: no removal then.
        if (watch.lastSequence !== seenBefore[i]) continue;
        if (watch.lastSequence !== undefined && watch.lastSequence > 0) {
          watch.lastSequence = 0;
          for (const channel of watch.channels) channel.wake();
        } else watch.lastSequence ??= 0;
        continue;
      }
      if (watch.lastSequence === undefined) {
        watch.lastSequence = last;
        continue;
      }
      this.chunks(watch.key, last);
    }
  }
}
