import { checkAppend, checkChunkLogKey, checkKeepUntil, checkNow, checkRead } from "./chunk-arguments.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "./chunk-log.js";
import { deepFreeze } from "./ledger/frozen-value.js";
import type { StoreCallContext } from "./snapshot-store.js";
import { WakeChannel } from "./wake-channel.js";

interface MemoryLog {
  /** Deep-frozen, in append order. */
  chunks: StoredChunk[];
  keepUntil: number;
}

const watchKey = (key: ChunkLogKey): string => `${key.sessionId}\0${key.snapshotId}`;

/** Index of the first chunk with a sequence greater than `after` (chunks are in increasing sequence order). */
function firstAfter(chunks: readonly StoredChunk[], after: number): number {
  let low = 0;
  let high = chunks.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (chunks[mid]!.sequence > after) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * The chunk logs of the in-memory store (see {@link ChunkLog}), grouped by
 * session so that removing a session drops its logs in one step. Each chunk
 * is stored as its JSON parses, deep-frozen, and handed out as it is (no
 * copies). Wake-ups are delivered synchronously by the append (the only
 * writers are in this process). The call context is ignored, as everywhere
 * in the memory store. Nothing expires by itself: the owner calls
 * `sweepChunks`.
 */
export class MemoryChunkLogs implements ChunkLog {
  private readonly bySession = new Map<string, Map<string, MemoryLog>>();
  private readonly watchers = new Map<string, Set<WakeChannel>>();

  /** Appends (see ChunkLog.appendChunks); the keep-until only moves later. */
  async appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    _ctx?: StoreCallContext,
  ): Promise<void> {
    const json = checkAppend(key, chunks, keepUntil);
    const stored = chunks.map((c, i) =>
      deepFreeze({ sequence: c.sequence, chunk: JSON.parse(json[i]!) as StoredChunk["chunk"] }),
    );
    let logs = this.bySession.get(key.sessionId);
    if (!logs) this.bySession.set(key.sessionId, (logs = new Map()));
    const log = logs.get(key.snapshotId);
    if (log) {
      log.chunks.push(...stored);
      log.keepUntil = Math.max(log.keepUntil, keepUntil);
    } else logs.set(key.snapshotId, { chunks: stored, keepUntil });
    for (const channel of this.watchers.get(watchKey(key)) ?? []) channel.wake();
  }

  /** The chunks after `afterSequence`, at most `limit` (the stored frozen values). */
  async readChunks(
    key: ChunkLogKey,
    afterSequence: number,
    limit: number,
    _ctx?: StoreCallContext,
  ): Promise<StoredChunk[]> {
    checkRead(key, afterSequence, limit);
    const chunks = this.logOf(key)?.chunks ?? [];
    const start = firstAfter(chunks, afterSequence);
    return chunks.slice(start, start + limit);
  }

  /** Whether the log exists. */
  async hasChunks(key: ChunkLogKey, _ctx?: StoreCallContext): Promise<boolean> {
    checkChunkLogKey(key, "hasChunks");
    return this.logOf(key) !== undefined;
  }

  /** Sets the keep-until time of an existing log. */
  async keepChunks(key: ChunkLogKey, keepUntil: number, _ctx?: StoreCallContext): Promise<void> {
    checkChunkLogKey(key, "keepChunks");
    checkKeepUntil(keepUntil, "keepChunks");
    const log = this.logOf(key);
    if (log) log.keepUntil = keepUntil;
  }

  /** Wakes on every later append in this process (the only place a memory store is written). */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<void> {
    checkChunkLogKey(key, "watchChunks");
    const id = watchKey(key);
    const channel: WakeChannel = new WakeChannel(signal, () => {
      const set = this.watchers.get(id);
      set?.delete(channel);
      if (set?.size === 0) this.watchers.delete(id);
    });
    if (channel.isClosed) return channel;
    let set = this.watchers.get(id);
    if (!set) this.watchers.set(id, (set = new Set()));
    set.add(channel);
    return channel;
  }

  /** Removes every log whose keep-until time is ≤ `now`. */
  async sweepChunks(now: number, _ctx?: StoreCallContext): Promise<number> {
    checkNow(now, "sweepChunks");
    let removed = 0;
    for (const [sessionId, logs] of this.bySession) {
      for (const [snapshotId, log] of logs) {
        if (log.keepUntil > now) continue;
        logs.delete(snapshotId);
        removed++;
      }
      if (logs.size === 0) this.bySession.delete(sessionId);
    }
    return removed;
  }

  /** Drops every log of the session; true when it had any. */
  removeSession(sessionId: string): boolean {
    return this.bySession.delete(sessionId);
  }

  /** Number of logs held. */
  get logCount(): number {
    let n = 0;
    for (const logs of this.bySession.values()) n += logs.size;
    return n;
  }

  /** Number of open `watchChunks` iterables. */
  get watcherCount(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  /** Ends every watcher. */
  closeAll(): void {
    for (const set of [...this.watchers.values()]) for (const channel of [...set]) channel.close();
  }

  private logOf(key: ChunkLogKey): MemoryLog | undefined {
    return this.bySession.get(key.sessionId)?.get(key.snapshotId);
  }
}
