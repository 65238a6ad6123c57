import type { ClientSession, Collection, Document, MongoClient } from "mongodb";
import type { AgentError } from "../../src/errors/agent-error.js";
import type { ChunkLogKey } from "../chunk-log.js";
import type { WakeChannel } from "../wake-channel.js";
import { ChangeStreamHub, readAfter, type StreamStart } from "./change-stream-hub.js";
import type { StreamChunkDocument } from "./chunk-document.js";
import { KEEP_SEQUENCE } from "./chunk-retention.js";
import { CoalescedReads } from "./coalesced-reads.js";
import type { StoreLogger } from "./store-logger.js";
import { TERMINAL_EVENTS } from "./stream-endings.js";

/**
 * The server-side filter of the chunk collection's one change stream:
 * inserts of chunks of any log (only their log and sequence are sent, never
 * a chunk; a log's keep document, sequence 0, never), and the events after
 * which the server ends the stream.
 */
export const CHUNK_INSERT_PIPELINE: Document[] = [
  {
    $match: {
      $or: [
        { operationType: "insert", "fullDocument.sequence": { $ne: KEEP_SEQUENCE } },
        { operationType: { $in: [...TERMINAL_EVENTS] } },
      ],
    },
  },
  {
    $project: {
      operationType: 1,
      "fullDocument.snapshotId": 1,
      "fullDocument.sessionId": 1,
      "fullDocument.sequence": 1,
    },
  },
];

/** What the chunk watchers need of the store. */
export interface ChunkStreamSource {
  /** The chunk collection, once the store is open (rejects with the store's opening error). */
  collection(): Promise<Collection<StreamChunkDocument>>;
  /** The store's client (the sessions of reads made at a stream's start time). */
  client: MongoClient;
  /** The FAILED_PRECONDITION error for a deployment that cannot run change streams. */
  unsupported(err: unknown): AgentError;
  logger?: StoreLogger;
}

const logId = (key: ChunkLogKey): string => `${key.sessionId}\0${key.snapshotId}`;

/** One `watchChunks` call: wakes its channel once per sequence higher than any it has seen. */
export class ChunkWatcher {
  /** Highest sequence seen (at the baseline, in an event, or offered). */
  private seen = 0;
  /** True once the log's highest sequence at the call is known (or could not be read). */
  private known = false;
  /** Highest sequence offered before the baseline was known. */
  private early = 0;
  /** Highest sequence this instance appended after the call, before the baseline was known. */
  private earlyAppend = 0;
  /** Settles once the baseline is known (see {@link known}). */
  readonly baseline: Promise<void>;

  constructor(
    readonly key: ChunkLogKey,
    readonly channel: WakeChannel,
    baseline: Promise<number>,
  ) {
    this.baseline = baseline.then(
      (sequence) => this.settle(sequence),
      () => this.settle(0), // unknown: the next event or catch-up read wakes for whatever is there
    );
  }

  /** True once its baseline is known (a later append then wakes it). */
  get caughtUp(): boolean {
    return this.known;
  }

  /** Wakes the channel when `sequence` is higher than any seen (held until the baseline is known). */
  offer(sequence: number): void {
    if (!this.known) {
      this.early = Math.max(this.early, sequence);
      return;
    }
    if (sequence <= this.seen) return;
    this.seen = sequence;
    this.channel.wake();
  }

  /**
   * An append this instance made after the call: wakes the channel even when
   * the baseline read, sent first, was served after the append landed (and so
   * already counts it).
   */
  appended(sequence: number): void {
    if (this.known) return this.offer(sequence);
    this.earlyAppend = Math.max(this.earlyAppend, sequence);
  }

  private settle(sequence: number): void {
    this.seen = Math.max(this.seen, sequence);
    this.known = true;
    if (this.earlyAppend > 0) {
      this.seen = Math.max(this.seen, this.earlyAppend, this.early);
      this.channel.wake();
      return;
    }
    if (this.early > 0) this.offer(this.early);
  }
}

/**
 * Every chunk watcher of a store instance, served by one change stream on
 * the chunk collection ({@link ChangeStreamHub}, filtered to chunk inserts:
 * {@link CHUNK_INSERT_PIPELINE}) whatever the number of watchers or logs.
 *
 * Before `watchChunks` returns, the watcher's baseline read is queued: the
 * log's highest sequence, read once for every watcher of that log added
 * before the read is sent ({@link CoalescedReads}); appends up to it are
 * "before the call" and never wake it. Each insert event wakes the watchers
 * of its log whose baseline is below its sequence (an event before the
 * baseline is known is held until then). After the stream opens, reopens or
 * is resumed by the driver, each watched log's highest sequence is read once
 * at a time no earlier than the stream's start ({@link readAfter}) and offered
 * to its watchers, so an append between a baseline and the stream wakes them.
 * In-process appends are {@link offer}ed directly. A deployment without
 * change streams fails every channel with FAILED_PRECONDITION.
 */
export class ChunkWatchers {
  private readonly byLog = new Map<string, Set<ChunkWatcher>>();
  private readonly lastReads = new CoalescedReads<number>();
  private readonly hub: ChangeStreamHub;

  constructor(private readonly source: ChunkStreamSource) {
    this.hub = new ChangeStreamHub(
      {
        collection: () => source.collection() as unknown as Promise<Collection<Document>>,
        pipeline: CHUNK_INSERT_PIPELINE,
        label: "chunk",
        fields: () => ({ watchedLogs: this.byLog.size, watchers: this.size }),
        unsupported: source.unsupported,
        ...(source.logger ? { logger: source.logger } : {}),
      },
      {
        established: (start) => this.catchUp(start),
        event: (change) => this.event(change),
        failed: (err) => this.failAll(err),
      },
    );
  }

  /** The shared change stream (diagnostics, tests). */
  get stream(): ChangeStreamHub {
    return this.hub;
  }

  /** Registered watchers. */
  get size(): number {
    let n = 0;
    for (const set of this.byLog.values()) n += set.size;
    return n;
  }

  /** Watchers caught up on an established stream (a later append reaches them). */
  get open(): number {
    if (!this.hub.isOpen) return 0;
    let n = 0;
    for (const set of this.byLog.values()) for (const watcher of set) if (watcher.caughtUp) n++;
    return n;
  }

  /** The watchers of `key`'s log. */
  of(key: ChunkLogKey): readonly ChunkWatcher[] {
    return [...(this.byLog.get(logId(key)) ?? [])];
  }

  /** Registers a watcher of `key` waking `channel`; starts the stream when it is the first. */
  add(key: ChunkLogKey, channel: WakeChannel): ChunkWatcher {
    const watcher = new ChunkWatcher(key, channel, this.lastSequence(key, undefined));
    const id = logId(key);
    let set = this.byLog.get(id);
    if (!set) this.byLog.set(id, (set = new Set()));
    set.add(watcher);
    this.hub.start();
    return watcher;
  }

  /** Unregisters a watcher; stops the stream when none remain. */
  remove(watcher: ChunkWatcher): void {
    const id = logId(watcher.key);
    const set = this.byLog.get(id);
    if (!set?.delete(watcher)) return;
    if (set.size === 0) this.byLog.delete(id);
    if (this.byLog.size === 0) this.hub.stop();
  }

  /** Wakes the watchers of `key`'s log for `sequence` (an event, or a catch-up read). */
  offer(key: ChunkLogKey, sequence: number): void {
    for (const watcher of this.byLog.get(logId(key)) ?? []) watcher.offer(sequence);
  }

  /** Wakes the watchers of `key`'s log for an append by this instance, made after they were added. */
  appended(key: ChunkLogKey, sequence: number): void {
    for (const watcher of this.byLog.get(logId(key)) ?? []) watcher.appended(sequence);
  }

  /** Ends every watcher's channel. */
  closeAll(): void {
    for (const set of [...this.byLog.values()]) for (const watcher of [...set]) watcher.channel.close();
    this.hub.stop();
  }

  /** The log's highest stored sequence (0 when none), one read for all callers queued before it is sent. */
  private lastSequence(key: ChunkLogKey, start: StreamStart): Promise<number> {
    const id = `${logId(key)}\0${start ? start.toString() : ""}`;
    // Not deferred: a baseline read must not be overtaken by an append made after the watch call.
    return this.lastReads.run(
      id,
      async (sending) => {
        const collection = await this.source.collection();
        sending();
        return readAfter(this.source.client, start, (session) => lastSequenceOf(collection, key, session));
      },
      false,
    );
  }

  /** After the stream (re)opened from `start`: one read per watched log, offered to its watchers. */
  private async catchUp(start: StreamStart): Promise<void> {
    const logs = [...this.byLog.values()].map((set) => [...set][0]!.key);
    await Promise.all(
      logs.map(async (key) => {
        try {
          this.offer(key, await this.lastSequence(key, start));
        } catch {
          // unreachable: the reopen after reconnecting reads again
        }
      }),
    );
  }

  private event(change: Document): void {
    if (change.operationType !== "insert") return;
    const doc = change.fullDocument as Partial<StreamChunkDocument> | undefined;
    if (typeof doc?.snapshotId !== "string" || typeof doc.sessionId !== "string") return;
    const key = { snapshotId: doc.snapshotId, sessionId: doc.sessionId };
    if (typeof doc.sequence === "number") this.offer(key, doc.sequence);
    else for (const watcher of this.byLog.get(logId(key)) ?? []) watcher.channel.wake(); // no sequence: wake anyway
  }

  private failAll(err: AgentError): void {
    for (const set of [...this.byLog.values()]) for (const watcher of [...set]) watcher.channel.fail(err);
  }
}

/** The log's highest chunk sequence (0 when it has none): one indexed query returning only the sequence. */
async function lastSequenceOf(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey,
  session: ClientSession | undefined,
): Promise<number> {
  const last = await collection.findOne(
    { snapshotId: key.snapshotId, sessionId: key.sessionId },
    { sort: { sequence: -1 }, projection: { sequence: 1 }, ...(session ? { session } : {}) },
  );
  return last?.sequence ?? 0;
}
