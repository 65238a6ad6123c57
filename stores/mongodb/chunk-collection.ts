import { BSON, ObjectId } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { checkAppend, checkChunkLogKey, checkKeepUntil, checkNow, checkRead } from "../chunk-arguments.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "../chunk-log.js";
import type { StoreCallContext } from "../snapshot-store.js";
import { WakeChannel } from "../wake-channel.js";
import { ChunkWatchers, type ChunkStreamSource } from "./chunk-stream.js";
import { CoalescedReads } from "./coalesced-reads.js";
import { expireAtOf, KEEP_SEQUENCE, keepLog, keptLater, TTL_BACKSTOP_MS } from "./chunk-retention.js";
import { appendedByRun, claimLog } from "./chunk-fence.js";
import { guarded, isDuplicateKey } from "./mongo-errors.js";
import { MAX_DOCUMENT_BYTES } from "./record-document.js";
import type { StreamChunkDocument } from "./chunk-document.js";

/** Chunk logs a sweep examines per query. */
const SWEEP_BATCH = 500;

const watchKey = (key: ChunkLogKey): string => `${key.sessionId}\0${key.snapshotId}`;

/** The filter of one log's documents. */
const logFilter = (key: ChunkLogKey): { snapshotId: string; sessionId: string } => ({
  snapshotId: key.snapshotId,
  sessionId: key.sessionId,
});

function tooLarge(key: ChunkLogKey, sequence: number, bytes: number): AgentError {
  return new AgentError(
    "RESOURCE_EXHAUSTED",
    `chunk ${sequence} of snapshot ${key.snapshotId} needs a ${(bytes / 1024 / 1024).toFixed(1)} MiB document, over MongoDB's ` +
      `16 MiB document limit; nothing was appended. Stream smaller chunks (e.g. an artifact in parts, or stored elsewhere and ` +
      `referenced) or use the SQLite or PostgreSQL store (64 MiB per record).`,
    { details: { snapshotId: key.snapshotId, sequence, bytes, limitBytes: MAX_DOCUMENT_BYTES } },
  );
}

/**
 * The chunk logs of the MongoDB store (see {@link ChunkLog}) in
 * `<prefix>stream_chunks`: one document per chunk (see
 * {@link StreamChunkDocument}), unique on (snapshotId, sequence), with a TTL
 * index on `expireAt`.
 *
 * Guarantees: `appendChunks` is one ordered `insertMany` with the store's
 * write concern (majority, journaled), so the chunks are durable when it
 * resolves; a chunk over 16 MiB as a document fails RESOURCE_EXHAUSTED before
 * anything is written; a sequence already stored fails ALREADY_EXISTS.
 * Each chunk carries its append's keep-until (`keepUntil`, written once);
 * `keepChunks` writes one document per log, its keep document (see
 * chunk-retention.ts), never a chunk: a heartbeat costs one write whatever
 * the log's length. A log's keep-until is its keep document's, or a later
 * one of a chunk appended after it. `sweepChunks` deletes whole logs whose
 * keep-until ≤ now. The TTL index on `expireAt` (keep-until plus a 30-day
 * backstop, written once) removes what nobody sweeps, document by document.
 * Every watcher of this instance is served by one change stream on the
 * collection (see {@link ChunkWatchers}); `readChunks` waits for the baseline
 * of this instance's watchers of the same log, so "watch, then read" misses
 * no append, and identical reads queued together (N followers of one log
 * woken by one append) are sent once.
 */
export class ChunkCollection implements ChunkLog {
  private readonly watchers: ChunkWatchers;
  private readonly chunkReads = new CoalescedReads<StoredChunk[]>();

  /** `source`: what the watchers need of the store (the collection, the no-change-streams error, the logger). */
  constructor(private readonly source: ChunkStreamSource) {
    this.watchers = new ChunkWatchers(source);
  }

  /**
   * Inserts the chunks (ordered) with their `keepUntil` (and TTL `expireAt`)
   * and `key.run`; this instance's watchers wake at once. With `key.run`, a
   * repeated append of chunks this run holds succeeds, and one at a sequence
   * a later run holds fails ABORTED (see chunk-fence.ts).
   */
  async appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    _ctx?: StoreCallContext,
  ): Promise<void> {
    const json = checkAppend(key, chunks, keepUntil);
    const docs = chunks.map((stored, i) => this.document(key, stored.sequence, json[i]!, keepUntil));
    const collection = await this.source.collection();
    await guarded(`appending chunks to the log of snapshot ${key.snapshotId}`, async () => {
      try {
        await collection.insertMany(docs, { ordered: true });
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        const sequences = docs.map((doc) => doc.sequence);
        if (await appendedByRun(collection, key, sequences)) return;
        throw new AgentError(
          "ALREADY_EXISTS",
          `the chunk log of snapshot ${key.snapshotId} already holds a chunk of sequences ${docs[0]!.sequence}-${docs[docs.length - 1]!.sequence}; ` +
            `an append must continue after the log's last sequence (chunks before the repeated one were appended)`,
          { cause: err },
        );
      }
    });
    this.watchers.appended(key, docs[docs.length - 1]!.sequence);
  }

  /** Appends run `key.run`'s first chunk at the log's next free sequence after `afterSequence` (see `ChunkLog.claimChunks`). */
  async claimChunks(
    key: ChunkLogKey & { run: number },
    afterSequence: number,
    first: (sequence: number) => StoredChunk["chunk"],
    keepUntil: number,
    _ctx?: StoreCallContext,
  ): Promise<number> {
    checkRead(key, afterSequence, 1);
    if (!Number.isSafeInteger(key.run) || key.run < 0) {
      throw new AgentError("INVALID_ARGUMENT", `claimChunks: run must be an integer >= 0 (got ${String(key.run)})`);
    }
    const collection = await this.source.collection();
    const sequence = await guarded(`claiming the chunk log of snapshot ${key.snapshotId}`, () =>
      claimLog(collection, key, afterSequence, (at) => {
        const [json] = checkAppend(key, [{ sequence: at, chunk: first(at) }], keepUntil);
        return this.document(key, at, json!, keepUntil);
      }),
    );
    this.watchers.appended(key, sequence);
    return sequence;
  }

  /** A chunk's document; RESOURCE_EXHAUSTED when it is over 16 MiB. */
  private document(key: ChunkLogKey, sequence: number, json: string, keepUntil: number): StreamChunkDocument {
    // With its _id (17 bytes), which the driver would otherwise add after this size check.
    const doc: StreamChunkDocument = {
      _id: new ObjectId(),
      ...logFilter(key),
      sequence,
      chunk: json,
      keepUntil: new Date(keepUntil),
      expireAt: expireAtOf(keepUntil),
      ...(key.run !== undefined ? { run: key.run } : {}),
    };
    const bytes = BSON.calculateObjectSize(doc as unknown as BSON.Document);
    if (bytes > MAX_DOCUMENT_BYTES) throw tooLarge(key, sequence, bytes);
    return doc;
  }

  /** One indexed query on (snapshotId, sequence), after this instance's watchers of the log know their baseline. */
  async readChunks(
    key: ChunkLogKey,
    afterSequence: number,
    limit: number,
    _ctx?: StoreCallContext,
  ): Promise<StoredChunk[]> {
    checkRead(key, afterSequence, limit);
    if (limit === 0) return []; // (a MongoDB limit of 0 means none)
    const read = await this.chunkReads.run(
      `${watchKey(key)}\0${afterSequence}\0${limit}`,
      (sending) => this.queryChunks(key, afterSequence, limit, sending),
      true,
    );
    return [...read];
  }

  /** The query of {@link readChunks}, once this instance's watchers of the log know their baseline. */
  private async queryChunks(
    key: ChunkLogKey,
    afterSequence: number,
    limit: number,
    sending: () => void,
  ): Promise<StoredChunk[]> {
    await Promise.all(this.watchers.of(key).map((watcher) => watcher.baseline));
    const collection = await this.source.collection();
    sending();
    const docs = await guarded(`reading the chunk log of snapshot ${key.snapshotId}`, () =>
      collection
        .find(
          { ...logFilter(key), sequence: { $gt: afterSequence } },
          { projection: { _id: 0, sequence: 1, chunk: 1 } },
        )
        .sort({ sequence: 1 })
        .limit(limit)
        .toArray(),
    );
    return docs.map((doc) => {
      try {
        return { sequence: doc.sequence, chunk: JSON.parse(doc.chunk) as StoredChunk["chunk"] };
      } catch (err) {
        throw new AgentError(
          "DATA_LOSS",
          `chunk ${doc.sequence} of snapshot ${key.snapshotId} in "${collection.collectionName}" is not a stored chunk (its "chunk" is not JSON); ` +
            `delete the log's documents to drop it`,
          { cause: err },
        );
      }
    });
  }

  /** Whether any chunk of the log is stored. */
  async hasChunks(key: ChunkLogKey, _ctx?: StoreCallContext): Promise<boolean> {
    checkChunkLogKey(key, "hasChunks");
    const collection = await this.source.collection();
    const found = await guarded(`reading the chunk log of snapshot ${key.snapshotId}`, () =>
      collection.findOne({ ...logFilter(key), sequence: { $gt: KEEP_SEQUENCE } }, { projection: { _id: 1 } }),
    );
    return found !== null;
  }

  /** Sets the log's keep-until on its keep document: one read and one write, no chunk rewritten (see chunk-retention.ts). */
  async keepChunks(key: ChunkLogKey, keepUntil: number, _ctx?: StoreCallContext): Promise<void> {
    checkChunkLogKey(key, "keepChunks");
    checkKeepUntil(keepUntil, "keepChunks");
    const collection = await this.source.collection();
    await guarded(`keeping the chunk log of snapshot ${key.snapshotId}`, () => keepLog(collection, key, keepUntil));
  }

  /** A watcher served by the instance's one chunk change stream (see {@link ChunkWatchers}), removed when `signal` aborts. */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<void> {
    checkChunkLogKey(key, "watchChunks");
    if (signal.aborted) return new WakeChannel(signal, () => undefined);
    // onClose never runs inside WakeChannel's constructor, so `watcher` is set by then.
    const channel: WakeChannel = new WakeChannel(signal, () => this.watchers.remove(watcher));
    const watcher = this.watchers.add(key, channel);
    return channel;
  }

  /**
   * Deletes every log whose keep-until is ≤ `now`, whole (`deleteMany` by
   * snapshotId), walking the snapshot IDs with documents kept no later than
   * `now` in batches (the TTL index, offset by the backstop), then checking
   * each log's keep document and later chunks ({@link keptLater}).
   */
  async sweepChunks(now: number, _ctx?: StoreCallContext): Promise<number> {
    checkNow(now, "sweepChunks");
    const collection = await this.source.collection();
    const cutoff = new Date(now);
    const expiredBy = new Date(now + TTL_BACKSTOP_MS);
    return guarded("sweeping chunk logs", async () => {
      let removed = 0;
      let after = "";
      for (;;) {
        const ids = (
          await collection
            .aggregate<{ _id: string }>([
              { $match: { expireAt: { $lte: expiredBy }, snapshotId: { $gt: after } } },
              { $group: { _id: "$snapshotId" } },
              { $sort: { _id: 1 } },
              { $limit: SWEEP_BATCH },
            ])
            .toArray()
        ).map((d) => d._id);
        for (const snapshotId of ids) {
          if (await keptLater(collection, snapshotId, cutoff)) continue;
          if ((await collection.deleteMany({ snapshotId })).deletedCount > 0) removed++;
        }
        if (ids.length < SWEEP_BATCH) return removed;
        after = ids[ids.length - 1]!;
      }
    });
  }

  /** Watchers caught up on an established change stream. */
  get openStreams(): number {
    return this.watchers.open;
  }

  /** Watchers still registered (1 while none is but the change stream is still closing); 0 once all have ended. */
  get watcherCount(): number {
    const registered = this.watchers.size;
    return registered > 0 ? registered : this.watchers.stream.isRunning ? 1 : 0;
  }

  /** The instance's one chunk change stream (diagnostics, tests). */
  get changeStream(): ChunkWatchers["stream"] {
    return this.watchers.stream;
  }

  /** Ends every watcher: its iterable ends, and the change stream closes. */
  closeAll(): void {
    this.watchers.closeAll();
  }
}
