import type { ChangeStream, Collection, Document, ResumeToken } from "mongodb";
import type { StatusChannel, StatusObservation } from "../status-channel.js";
import { StatusSubscribers } from "../status-subscribers.js";
import type { RecordDocument } from "./record-document.js";
import { STATUS_PIPELINE, statusEventOf } from "./status-events.js";

/** Reads a record's current status and version (undefined when it does not exist). */
export type StatusReader = (snapshotId: string) => Promise<StatusObservation | undefined>;

/** Pause after an empty getMore batch (bounds the extra delivery latency). */
const IDLE_PAUSE_MS = 25;

/**
 * One change stream per store instance, multiplexed to every status
 * subscriber by snapshot ID. Opened lazily with the first subscriber, closed
 * when the last one leaves. After an error (network failure, server restart)
 * it reopens with the last resume token (falling back to a fresh stream when
 * the server no longer knows the token), then re-reads every subscribed record, so
 * a change made while it was down is still delivered; each subscriber's
 * {@link StatusChannel} version gate drops anything already delivered.
 */
export class ChangeStreamMultiplexer {
  private readonly channels = new StatusSubscribers();
  private stream: ChangeStream<RecordDocument, Document> | undefined;
  /** True once the server has answered the stream's aggregate: changes from then on arrive through it. */
  private established = false;
  private generation = 0;
  private running = false;
  private resumeToken: ResumeToken | undefined;
  private reopenCount = 0;
  private eventCount = 0;
  private readonly resyncTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly collection: () => Promise<Collection<RecordDocument>>,
    private readonly readStatus: StatusReader,
  ) {}

  /** True while a change stream is established on the server (a change written from then on reaches it). */
  get isOpen(): boolean {
    return this.stream !== undefined && this.established;
  }

  /** How many times the stream was reopened or resynchronised after a connection loss (diagnostics, tests). */
  get reopens(): number {
    return this.reopenCount;
  }

  /** Change events the server delivered to this instance (after its server-side filter). */
  get eventsReceived(): number {
    return this.eventCount;
  }

  /**
   * Re-reads every subscribed record now and again 1 s and 3 s later. Called after
   * the connection to the server was lost and is back: the driver resumes the
   * stream with its resume token by itself, and these re-reads deliver any
   * status change a resumed stream cannot (history lost, or an in-memory server
   * that restarted empty and silently skips an unknown token); the version gate
   * drops whatever was already delivered.
   */
  resync(): void {
    if (!this.running) return;
    this.reopenCount++;
    this.rereadAll();
    for (const ms of [1000, 3000]) {
      const timer = setTimeout(() => {
        this.resyncTimers.delete(timer);
        this.rereadAll();
      }, ms);
      timer.unref();
      this.resyncTimers.add(timer);
    }
  }

  private rereadAll(): void {
    for (const id of this.channels.ids()) void this.reread(id);
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
    for (const timer of this.resyncTimers) clearTimeout(timer);
    this.resyncTimers.clear();
    this.running = false;
    this.generation++;
    this.resumeToken = undefined;
    const stream = this.stream;
    this.stream = undefined;
    this.established = false;
    void stream?.close().catch(() => undefined);
  }

  private live(generation: number): boolean {
    return this.running && generation === this.generation;
  }

  private async run(generation: number): Promise<void> {
    let delay = 50;
    let first = true;
    while (this.live(generation)) {
      let stream: ChangeStream<RecordDocument, Document> | undefined;
      const resuming = this.resumeToken !== undefined;
      try {
        const collection = await this.collection();
        if (!this.live(generation)) return;
        // No updateLookup: the pipeline reads the status from the event itself (see STATUS_PIPELINE).
        stream = collection.watch<RecordDocument, Document>(STATUS_PIPELINE, {
          maxAwaitTimeMS: 1000,
          ...(this.resumeToken ? { resumeAfter: this.resumeToken } : {}),
        });
        this.stream = stream;
        this.established = false;
        const early = await stream.tryNext(); // sends the aggregate: the stream is now established
        if (!this.live(generation)) return;
        this.established = true;
        if (!first) this.resync();
        else await Promise.all([...this.channels.ids()].map((id) => this.reread(id)));
        first = false;
        delay = 50;
        if (early) this.handle(early);
        this.resumeToken = stream.resumeToken ?? this.resumeToken;
        while (this.live(generation)) {
          // One getMore per call (a real server holds it up to maxAwaitTimeMS); after an empty
          // batch pause briefly, so a server that answers getMore at once (mongo-java-server)
          // is polled ~40 times a second instead of in a tight loop.
          const change = await stream.tryNext();
          this.resumeToken = stream.resumeToken ?? this.resumeToken;
          if (change) this.handle(change);
          else await new Promise((resolve) => setTimeout(resolve, IDLE_PAUSE_MS));
        }
      } catch (err) {
        if (!this.live(generation)) return;
        // A token the server rejects (history lost, invalid) cannot be resumed: start fresh; the re-read covers the gap.
        if (resuming && isUnresumable(err)) this.resumeToken = undefined;
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 1000);
      } finally {
        if (stream && this.stream === stream) this.stream = undefined;
        await stream?.close().catch(() => undefined);
      }
    }
  }

  private handle(change: Document): void {
    this.eventCount++;
    const event = statusEventOf(change);
    if (!event || !this.channels.has(event.snapshotId)) return;
    if (event.observation) this.deliver(event.snapshotId, event.observation);
    else void this.reread(event.snapshotId);
  }

  private async reread(snapshotId: string): Promise<void> {
    try {
      const observation = await this.readStatus(snapshotId);
      if (observation) this.deliver(snapshotId, observation);
    } catch {
      // server unreachable: the reopen after reconnecting re-reads again
    }
  }
}

/** Server errors meaning the resume token can never be used again. */
const UNRESUMABLE_CODES = new Set([260 /* InvalidResumeToken */, 280 /* ChangeStreamFatalError */, 286 /* ChangeStreamHistoryLost */]);

function isUnresumable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "number" && UNRESUMABLE_CODES.has(code);
}
