import type { ChangeStream, Collection, Document, MongoClient, ResumeToken, Timestamp } from "mongodb";
import type { StatusChannel, StatusObservation } from "../status-channel.js";
import { StatusSubscribers } from "../status-subscribers.js";
import { onStreamStart, readAfter, resumedStart } from "./change-stream-hub.js";
import type { RecordDocument } from "./record-document.js";
import { classifyChangeEvent, STATUS_PIPELINE } from "./status-events.js";
import type { StoreLogger } from "./store-logger.js";
import { STATUS_STREAM, type StreamHealth } from "./stream-health.js";
import { closedByServer, endingOfError, type StreamEnding } from "./stream-endings.js";

/**
 * Reads a record's current status and version (undefined when it does not
 * exist); with `start` (a change stream's start time), at a time no earlier
 * than it (`afterClusterTime`), so no change the stream starts after is missed.
 */
export type StatusReader = (snapshotId: string, start?: Timestamp) => Promise<StatusObservation | undefined>;

/**
 * The {@link StatusReader} of the `snapshots` collection: one projected read of
 * a record's status and version, made after `start` ({@link readAfter}).
 */
export function recordStatusReader(
  client: MongoClient,
  records: () => Promise<Collection<RecordDocument>>,
): StatusReader {
  return async (id, start) => {
    const collection = await records();
    const doc = await readAfter(client, start, (session) =>
      collection.findOne({ _id: id }, { projection: { status: 1, version: 1 }, ...(session ? { session } : {}) }),
    );
    return doc ? { status: doc.status, version: doc.version } : undefined;
  };
}

/** Pause after an empty getMore batch (bounds the extra delivery latency). */
const IDLE_PAUSE_MS = 25;
/** First pause before reopening an ended stream; doubled (up to {@link MAX_REOPEN_DELAY_MS}) while streams keep ending young. */
const MIN_REOPEN_DELAY_MS = 50;
const MAX_REOPEN_DELAY_MS = 2_000;
/** A stream that lived this long ended "normally": the next reopen starts at the shortest pause again. */
const STABLE_STREAM_MS = 5_000;

/**
 * The driver's cursor behind a change stream. The driver (7.x) resumes a
 * stream after a resumable error (network, failover, a killed cursor) by
 * itself, inside `tryNext`, replacing this cursor; no public event says so,
 * so a new cursor object is how the store notices a resume. (Should a future
 * driver rename the field, resumes go unnoticed here and the reconnect path,
 * {@link ChangeStreamMultiplexer.requestReopen}, still covers lost connections.)
 */
function driverCursorOf(stream: ChangeStream<RecordDocument, Document>): unknown {
  return (stream as unknown as { cursor?: unknown }).cursor;
}

/** What the multiplexer last reported about how its stream ended (diagnostics, tests). */
export interface StreamEndingReport extends StreamEnding {
  /** Epoch ms of the ending. */
  at: number;
}

/**
 * One change stream per store instance, multiplexed to every status
 * subscriber by snapshot ID. Opened lazily with the first subscriber, closed
 * when the last one leaves.
 *
 * The stream is reopened on every way it can end: an error (resumed from its
 * resume token only when the error is transient, see {@link StreamEnding}),
 * an invalidating event (collection dropped or renamed, database dropped), a
 * cursor the server closed (which the driver reports only as `closed`), an
 * oversized event (reopened from now, never from the token before it), and a
 * lost-and-restored connection to the primary ({@link requestReopen}, at most
 * once per reconnect). A resume the driver makes by itself after a resumable
 * error counts as a reopen too (a server without post-batch resume tokens
 * resumes from "now"). After each reopen it re-reads every subscribed record
 * once, so a change made while it was down is still delivered; each
 * subscriber's {@link StatusChannel} version gate drops anything already
 * delivered. Each ending and reopen is counted ({@link reopens}), reported
 * ({@link lastEnding}) and logged.
 */
export class ChangeStreamMultiplexer {
  private readonly channels = new StatusSubscribers();
  private stream: ChangeStream<RecordDocument, Document> | undefined;
  /** True once the server has answered the stream's aggregate: changes from then on arrive through it. */
  private established = false;
  private establishedAt = 0;
  private generation = 0;
  private running = false;
  private resumeToken: ResumeToken | undefined;
  private reopenCount = 0;
  private eventCount = 0;
  private reopenRequest: string | undefined;
  private ending: StreamEndingReport | undefined;
  /** The cluster time the current stream started after (undefined: the server sent none). */
  private streamStart: Timestamp | undefined;

  constructor(
    private readonly collection: () => Promise<Collection<RecordDocument>>,
    private readonly readStatus: StatusReader,
    private readonly logger?: StoreLogger,
    /** Told when the stream fails for good (and when it is established again): see StreamHealth. */
    private readonly health?: StreamHealth,
  ) {}

  /** True while a change stream is established on the server (a change written from then on reaches it). */
  get isOpen(): boolean {
    return this.stream !== undefined && this.established;
  }

  /** How many times an ended stream was reopened (diagnostics, tests). */
  get reopens(): number {
    return this.reopenCount;
  }

  /** Change events the server delivered to this instance (after its server-side filter). */
  get eventsReceived(): number {
    return this.eventCount;
  }

  /** How the stream last ended, or undefined if it never did. */
  get lastEnding(): StreamEndingReport | undefined {
    return this.ending;
  }

  /**
   * Asks for the stream to be reopened from now (and the subscribed records
   * re-read once): the connection to the primary was lost at `lostAt` and is
   * back. The driver resumes a stream by itself after a network error, but a
   * server that lost its history (an in-memory server that restarted empty)
   * may then silently skip changes. Ignored when the current stream was
   * established after `lostAt` (it and its re-read already cover the loss).
   */
  requestReopen(reason: string, lostAt: number): void {
    if (!this.running) return;
    if (this.established && this.establishedAt >= lostAt) return;
    this.reopenRequest = reason;
  }

  /** Adds a subscriber, starts the stream if needed, and delivers the record's current status. */
  add(snapshotId: string, channel: StatusChannel): void {
    this.channels.add(snapshotId, channel);
    if (!this.running) this.start();
    void this.reread(snapshotId);
  }

  /** Removes a subscriber; closes the stream when none remain. */
  remove(snapshotId: string, channel: StatusChannel): void {
    this.channels.remove(snapshotId, channel);
    if (this.channels.isEmpty) this.stop();
  }

  /** Delivers an observation made by this instance's own write (faster than the round trip). */
  deliver(snapshotId: string, observation: StatusObservation): void {
    this.channels.deliver(snapshotId, observation);
  }

  /** Ends every subscriber and closes the stream. */
  closeAll(): void {
    this.channels.closeAll();
    this.stop();
  }

  private start(): void {
    this.running = true;
    const generation = ++this.generation;
    void this.run(generation);
  }

  private stop(): void {
    this.running = false;
    this.generation++;
    this.resumeToken = undefined;
    this.reopenRequest = undefined;
    const stream = this.stream;
    this.stream = undefined;
    this.established = false;
    void stream?.close().catch(() => undefined);
  }

  private live(generation: number): boolean {
    return this.running && generation === this.generation;
  }

  private async run(generation: number): Promise<void> {
    let delay = MIN_REOPEN_DELAY_MS;
    let opened = 0;
    let failedAttempts = 0;
    let previous: StreamEnding | undefined;
    while (this.live(generation)) {
      let ending: StreamEnding | undefined;
      let stream: ChangeStream<RecordDocument, Document> | undefined;
      let livedFrom = 0;
      try {
        const collection = await this.collection();
        if (!this.live(generation)) return;
        // No updateLookup: the pipeline reads the status from the event itself (see STATUS_PIPELINE).
        stream = collection.watch<RecordDocument, Document>(STATUS_PIPELINE, {
          maxAwaitTimeMS: 1000,
          ...(this.resumeToken ? { resumeAfter: this.resumeToken } : {}),
        });
        // The cluster time the stream (or the driver's resume of it) starts after: re-reads are made at it.
        onStreamStart(stream as unknown as ChangeStream<Document, Document>, (at) => (this.streamStart = at));
        this.stream = stream;
        this.established = false;
        const early = await stream.tryNext(); // sends the aggregate: the stream is now established
        if (!this.live(generation)) return;
        if (early === null && stream.closed)
          throw Object.assign(new Error("the server closed the change stream as it opened"), { closedAtOpen: true });
        this.established = true;
        this.health?.recovered(STATUS_STREAM);
        this.establishedAt = livedFrom = Date.now();
        this.reopenRequest = undefined;
        let cursor = driverCursorOf(stream);
        if (opened++ > 0) this.reopened(previous, failedAttempts);
        failedAttempts = 0;
        await Promise.all([...this.channels.ids()].map((id) => this.reread(id, this.streamStart)));
        if (early) ending = this.consume(early);
        this.resumeToken = stream.resumeToken ?? this.resumeToken;
        while (this.live(generation) && !ending) {
          if (this.reopenRequest !== undefined) {
            ending = { reason: this.reopenRequest, resume: false };
            break;
          }
          // One getMore per call (a real server holds it up to maxAwaitTimeMS); after an empty
          // batch pause briefly, so a server that answers getMore at once (mongo-java-server)
          // is polled ~40 times a second instead of in a tight loop.
          const change = await stream.tryNext();
          this.resumeToken = stream.resumeToken ?? this.resumeToken;
          if (driverCursorOf(stream) !== cursor) {
            cursor = driverCursorOf(stream);
            this.streamStart = resumedStart(stream as unknown as ChangeStream<Document, Document>) ?? this.streamStart;
            await this.resumedByDriver();
          }
          if (change) ending = this.consume(change);
          else if (stream.closed) ending = closedByServer();
          else await new Promise((resolve) => setTimeout(resolve, IDLE_PAUSE_MS));
        }
      } catch (err) {
        if (!this.live(generation)) return;
        ending = (err as { closedAtOpen?: boolean }).closedAtOpen
          ? { reason: (err as Error).message, resume: false }
          : endingOfError(err);
      } finally {
        if (stream && this.stream === stream) {
          this.stream = undefined;
          this.established = false;
        }
        await stream?.close().catch(() => undefined);
      }
      if (!this.live(generation) || !ending) return;
      if (!ending.resume) this.resumeToken = undefined;
      if (livedFrom === 0) failedAttempts++;
      this.ended(ending, failedAttempts);
      // Failed for good (PERMANENT_AFTER_FAILED_OPENS opens in a row): subscribers hear UNAVAILABLE, health turns NOT_SERVING.
      const permanent = this.health?.failedOpen(STATUS_STREAM, failedAttempts, ending.reason);
      if (permanent) this.channels.failAll(permanent);
      if (failedAttempts <= 1) previous = ending;
      delay =
        livedFrom > 0 && Date.now() - livedFrom >= STABLE_STREAM_MS
          ? MIN_REOPEN_DELAY_MS
          : Math.min(delay * 2, MAX_REOPEN_DELAY_MS);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** Handles one change event; returns the stream's ending when the event ends it. */
  private consume(change: Document): StreamEnding | undefined {
    this.eventCount++;
    const classified = classifyChangeEvent(change);
    if (classified.kind === "ending") return classified.ending;
    if (classified.kind === "ignored") return undefined;
    const { event } = classified;
    if (!this.channels.has(event.snapshotId)) return undefined;
    if (event.observation) this.deliver(event.snapshotId, event.observation);
    else void this.reread(event.snapshotId);
    return undefined;
  }

  /**
   * Records and logs an ending: every end of an established stream, and the
   * first of a row of failed (re)open attempts (later ones are only counted).
   */
  private ended(ending: StreamEnding, failedAttempts: number): void {
    this.ending = { ...ending, at: Date.now() };
    if (failedAttempts > 1) return;
    const fields = {
      reason: ending.reason,
      resume: ending.resume,
      ...(ending.code !== undefined ? { code: ending.code } : {}),
      subscribed: this.channels.size,
    };
    this.logger?.warn(
      fields,
      failedAttempts === 1
        ? "MongoDB change stream could not be opened; retrying"
        : "MongoDB change stream ended; reopening it",
    );
  }

  /** The driver resumed the stream on a new cursor: that is a reopen (it also covers a reconnect that caused it). */
  private async resumedByDriver(): Promise<void> {
    this.establishedAt = Date.now();
    this.reopenRequest = undefined;
    this.reopenCount++;
    this.logger?.warn(
      { reopens: this.reopenCount, resumed: this.resumeToken !== undefined, rereading: this.channels.size },
      "MongoDB change stream resumed by the driver after an error; re-reading the subscribed snapshots",
    );
    await Promise.all([...this.channels.ids()].map((id) => this.reread(id, this.streamStart)));
  }

  private reopened(after: StreamEnding | undefined, failedAttempts: number): void {
    this.reopenCount++;
    this.logger?.warn(
      {
        reopens: this.reopenCount,
        after: after?.reason,
        resumed: this.resumeToken !== undefined,
        failedAttempts,
        rereading: this.channels.size,
      },
      "MongoDB change stream reopened; re-reading the subscribed snapshots",
    );
  }

  private async reread(snapshotId: string, start?: Timestamp): Promise<void> {
    try {
      const observation = await this.readStatus(snapshotId, start);
      if (observation) this.deliver(snapshotId, observation);
    } catch {
      // server unreachable: the reopen after reconnecting re-reads again
    }
  }
}
