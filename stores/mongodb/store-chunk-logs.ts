import type { StoreCallContext } from "../snapshot-store.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "../chunk-log.js";
import type { ChunkCollection } from "./chunk-collection.js";

/**
 * The chunk-log side of `MongoSessionStore`: every `ChunkLog` method served
 * by the store's `ChunkCollection` (`stream_chunks`, one chunk change stream
 * per instance), plus its diagnostics. The subclass provides the collection.
 */
export abstract class MongoChunkLogs implements ChunkLog {
  /** The store's chunk logs (see ChunkCollection). */
  protected abstract readonly chunkLogs: ChunkCollection;

  /** One ordered insertMany, each chunk with its keepUntil (see `ChunkLog.appendChunks`, `ChunkCollection`). */
  appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<void> {
    return this.chunkLogs.appendChunks(key, chunks, keepUntil, ctx);
  }

  /** A takeover's first chunk at the log's next free sequence; earlier runs' appends are refused from then on (see `ChunkLog.claimChunks`). */
  claimChunks(
    key: ChunkLogKey & { run: number },
    afterSequence: number,
    first: (sequence: number) => StoredChunk["chunk"],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<number> {
    return this.chunkLogs.claimChunks(key, afterSequence, first, keepUntil, ctx);
  }

  /** The log's chunks after `afterSequence`, at most `limit`: one indexed find (see `ChunkLog.readChunks`). */
  readChunks(key: ChunkLogKey, afterSequence: number, limit: number, ctx?: StoreCallContext): Promise<StoredChunk[]> {
    return this.chunkLogs.readChunks(key, afterSequence, limit, ctx);
  }

  /** Whether a chunk of the log is stored (see `ChunkLog.hasChunks`). */
  hasChunks(key: ChunkLogKey, ctx?: StoreCallContext): Promise<boolean> {
    return this.chunkLogs.hasChunks(key, ctx);
  }

  /** One write to the log's keep document, never a chunk (see `ChunkLog.keepChunks`, chunk-retention.ts). */
  keepChunks(key: ChunkLogKey, keepUntil: number, ctx?: StoreCallContext): Promise<void> {
    return this.chunkLogs.keepChunks(key, keepUntil, ctx);
  }

  /** Served by the instance's one chunk change stream (see `ChunkLog.watchChunks`, `ChunkWatchers`). */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<void> {
    return this.chunkLogs.watchChunks(key, signal, ctx);
  }

  /** Deletes the logs whose keep-until time is ≤ `now`, whole (see `ChunkLog.sweepChunks`). */
  sweepChunks(now: number, ctx?: StoreCallContext): Promise<number> {
    return this.chunkLogs.sweepChunks(now, ctx);
  }

  /** Chunk watchers caught up on the instance's established chunk change stream (tests, diagnostics). */
  get chunkStreamsOpen(): number {
    return this.chunkLogs.openStreams;
  }

  /** Chunk watchers still registered (1 while none is but the chunk change stream is closing); 0 once all have ended. */
  get chunkWatcherCount(): number {
    return this.chunkLogs.watcherCount;
  }
}
