import type { ChangeStream, Collection, Document, ResumeToken } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { ChunkLogKey } from "../chunk-log.js";
import type { WakeChannel } from "../wake-channel.js";
import { isChangeStreamUnsupported } from "./change-stream-support.js";
import type { StreamChunkDocument } from "./chunk-collection.js";
import type { StoreLogger } from "./store-logger.js";
import { closedByServer, endingOfError, endingOfEvent, TERMINAL_EVENTS, type StreamEnding } from "./stream-endings.js";

/** Pause after an empty getMore batch (a server that answers getMore at once, like mongo-java-server, is polled ~40 times a second). */
const IDLE_PAUSE_MS = 25;
/** First pause before reopening an ended stream; doubled (up to {@link MAX_REOPEN_DELAY_MS}) while streams keep ending young. */
const MIN_REOPEN_DELAY_MS = 50;
const MAX_REOPEN_DELAY_MS = 2_000;
/** A stream that lived this long ended "normally": the next reopen starts at the shortest pause again. */
const STABLE_STREAM_MS = 5_000;

/**
 * The server-side filter of a chunk watcher's change stream: inserts of its
 * log's chunks (only their sequence is sent, never a chunk), and the events
 * after which the server ends the stream (so the watcher knows to reopen).
 */
export function chunkInsertPipeline(key: ChunkLogKey): Document[] {
  return [
    {
      $match: {
        $or: [
          {
            operationType: "insert",
            "fullDocument.snapshotId": key.snapshotId,
            "fullDocument.sessionId": key.sessionId,
          },
          { operationType: { $in: [...TERMINAL_EVENTS] } },
        ],
      },
    },
    { $project: { operationType: 1, "fullDocument.sequence": 1 } },
  ];
}

/** What a {@link ChunkStream} needs of the store. */
export interface ChunkStreamSource {
  /** The chunk collection, once the store is open (rejects with the store's opening error). */
  collection(): Promise<Collection<StreamChunkDocument>>;
  /** The log's highest stored sequence; 0 when it has none. */
  lastSequence(key: ChunkLogKey): Promise<number>;
  /** The FAILED_PRECONDITION error for a deployment that cannot run change streams. */
  unsupported(err: unknown): AgentError;
  logger?: StoreLogger;
}

/** The driver's cursor behind a change stream: a new object means the driver resumed the stream by itself (see status-stream.ts). */
function driverCursorOf(stream: ChangeStream<StreamChunkDocument, Document>): unknown {
  return (stream as unknown as { cursor?: unknown }).cursor;
}

/**
 * One `watchChunks` watcher: its own change stream on the chunk collection,
 * filtered on the server to inserts of its log ({@link chunkInsertPipeline}),
 * waking its channel once per sequence higher than any it has seen.
 *
 * Before the call returns, the log's highest sequence is read (the
 * {@link ChunkStream.baseline}): appends up to it are "before the call" and
 * never wake. The stream opens once that is known; once the server has
 * established it, the highest sequence is read again and a higher one wakes
 * (an append between the baseline and the stream has no event), and so
 * after every reopen. The stream is reopened however it ends (an error, from
 * its resume token only when transient; an invalidating event; a cursor the
 * server closed; a resume the driver made by itself), with a growing pause
 * while reopens keep failing. A deployment without change streams (or a store
 * that cannot open) fails the channel with FAILED_PRECONDITION. In-process
 * appends are {@link offer}ed directly, so they wake without the round trip.
 */
export class ChunkStream {
  /** Highest sequence seen (at the baseline, in an event, or offered). */
  private seen = 0;
  private stream: ChangeStream<StreamChunkDocument, Document> | undefined;
  private established = false;
  private stopped = false;
  private stopWaiting: (() => void) | undefined;
  /** Settles once the log's highest sequence at the call is known (or could not be read). */
  readonly baseline: Promise<void>;
  /** Settles once the watcher has stopped and closed its stream. */
  readonly done: Promise<void>;

  constructor(
    private readonly key: ChunkLogKey,
    private readonly channel: WakeChannel,
    private readonly source: ChunkStreamSource,
  ) {
    this.baseline = source.lastSequence(key).then(
      (sequence) => {
        this.seen = Math.max(this.seen, sequence);
      },
      () => undefined, // unknown: the catch-up read after the stream opens wakes for whatever is there
    );
    this.done = this.run();
  }

  /** True while its change stream is established and caught up (a later insert reaches it). */
  get isOpen(): boolean {
    return this.established;
  }

  /** Wakes the channel when `sequence` is higher than any seen so far. */
  offer(sequence: number): void {
    if (sequence <= this.seen) return;
    this.seen = sequence;
    this.channel.wake();
  }

  /** Stops the watcher and closes its stream (see {@link done}). Idempotent. */
  stop(): void {
    this.stopped = true;
    this.established = false;
    this.stopWaiting?.();
    void this.stream?.close().catch(() => undefined);
  }

  private async run(): Promise<void> {
    await this.baseline;
    let delay = MIN_REOPEN_DELAY_MS;
    let failedAttempts = 0;
    let token: ResumeToken | undefined;
    while (!this.stopped) {
      let ending: StreamEnding | undefined;
      let stream: ChangeStream<StreamChunkDocument, Document> | undefined;
      let livedFrom = 0;
      try {
        const collection = await this.source.collection();
        if (this.stopped) return;
        stream = collection.watch<StreamChunkDocument, Document>(chunkInsertPipeline(this.key), {
          maxAwaitTimeMS: 1000,
          ...(token ? { resumeAfter: token } : {}),
        });
        this.stream = stream;
        const early = await stream.tryNext(); // sends the aggregate: the stream is now established
        if (this.stopped) return;
        if (early === null && stream.closed) throw closedAtOpen();
        this.offer(await this.source.lastSequence(this.key)); // catch up: appends before the stream had no event
        if (this.stopped) return;
        this.established = true;
        livedFrom = Date.now();
        failedAttempts = 0;
        let cursor = driverCursorOf(stream);
        if (early) ending = this.consume(early);
        token = stream.resumeToken ?? token;
        while (!this.stopped && !ending) {
          const change = await stream.tryNext();
          token = stream.resumeToken ?? token;
          if (driverCursorOf(stream) !== cursor) {
            cursor = driverCursorOf(stream);
            this.offer(await this.source.lastSequence(this.key)); // resumed by the driver: catch up again
          }
          if (change) ending = this.consume(change);
          else if (stream.closed) ending = closedByServer();
          else await this.pause(IDLE_PAUSE_MS);
        }
      } catch (err) {
        if (this.stopped) return;
        const fatal = this.fatalError(err);
        if (fatal) {
          this.channel.fail(fatal);
          return;
        }
        ending = (err as { closedAtOpen?: boolean }).closedAtOpen
          ? { reason: (err as Error).message, resume: false }
          : endingOfError(err);
      } finally {
        this.established = false;
        if (this.stream === stream) this.stream = undefined;
        await stream?.close().catch(() => undefined);
      }
      if (this.stopped || !ending) return;
      if (!ending.resume) token = undefined;
      if (livedFrom === 0) failedAttempts++;
      if (failedAttempts <= 1) {
        this.source.logger?.warn(
          { snapshotId: this.key.snapshotId, reason: ending.reason, resume: ending.resume },
          failedAttempts === 1
            ? "MongoDB chunk change stream could not be opened; retrying"
            : "MongoDB chunk change stream ended; reopening it",
        );
      }
      delay =
        livedFrom > 0 && Date.now() - livedFrom >= STABLE_STREAM_MS
          ? MIN_REOPEN_DELAY_MS
          : Math.min(delay * 2, MAX_REOPEN_DELAY_MS);
      await this.pause(delay);
    }
  }

  /** The error that ends the watch for good: the store cannot open (another format, no change streams). */
  private fatalError(err: unknown): AgentError | undefined {
    if (err instanceof AgentError && err.status === "FAILED_PRECONDITION") return err;
    if (isChangeStreamUnsupported(err)) return this.source.unsupported(err);
    return undefined;
  }

  /** Handles one change event; returns the stream's ending when the event ends it. */
  private consume(change: Document): StreamEnding | undefined {
    const ending = endingOfEvent(change);
    if (ending) return ending;
    const sequence = (change.fullDocument as { sequence?: unknown } | undefined)?.sequence;
    if (change.operationType !== "insert") return undefined;
    if (typeof sequence === "number") this.offer(sequence);
    else this.channel.wake(); // an insert of the log without its sequence: wake anyway
    return undefined;
  }

  private pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.stopWaiting = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

function closedAtOpen(): Error {
  return Object.assign(new Error("the server closed the change stream as it opened"), { closedAtOpen: true });
}
