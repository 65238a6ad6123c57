import type { ChangeStream, ChangeStreamDocument, Collection, ResumeToken } from "mongodb";
import type { StatusChannel, StatusObservation } from "../status-channel.js";
import { StatusSubscribers } from "../status-subscribers.js";
import type { SnapshotDocument } from "./snapshot-document.js";

/** Reads a row's current status and version (undefined when it does not exist). */
export type StatusReader = (snapshotId: string) => Promise<StatusObservation | undefined>;

/**
 * Server-side filter: inserts, `replace` events that changed the status (our
 * own writes are replacements flagged with `statusChanged`), and `update`
 * events (written by other tools; also how mongo-java-server reports a
 * replacement, with no way to tell a status change apart — the version gate
 * drops those that change nothing). The state payload is projected away.
 */
const PIPELINE = [
  {
    $match: {
      $or: [{ operationType: { $in: ["insert", "update"] } }, { operationType: "replace", "fullDocument.statusChanged": true }],
    },
  },
  { $project: { "fullDocument.data": 0 } },
];

/** Pause after an empty getMore batch (bounds the extra delivery latency). */
const IDLE_PAUSE_MS = 25;

/**
 * One change stream per store instance, multiplexed to every status
 * subscriber by snapshot ID. Opened lazily with the first subscriber, closed
 * when the last one leaves. After an error (network failure, server restart)
 * it reopens with the last resume token (falling back to a fresh stream when
 * the server no longer knows the token), then re-reads every subscribed row, so
 * a change made while it was down is still delivered; each subscriber's
 * {@link StatusChannel} version gate drops anything already delivered.
 */
export class ChangeStreamMultiplexer {
  private readonly channels = new StatusSubscribers();
  private stream: ChangeStream<SnapshotDocument> | undefined;
  private generation = 0;
  private running = false;
  private resumeToken: ResumeToken | undefined;
  private reopenCount = 0;
  private readonly resyncTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly collection: () => Promise<Collection<SnapshotDocument>>,
    private readonly readStatus: StatusReader,
  ) {}

  /** True while a change stream is open on the server. */
  get isOpen(): boolean {
    return this.stream !== undefined;
  }

  /** How many times the stream was reopened or resynchronised after a connection loss (diagnostics, tests). */
  get reopens(): number {
    return this.reopenCount;
  }

  /**
   * Re-reads every subscribed row now and again 1 s and 3 s later. Called after
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

  /** Adds a subscriber, starts the stream if needed, and delivers the row's current status. */
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
    void stream?.close().catch(() => undefined);
  }

  private live(generation: number): boolean {
    return this.running && generation === this.generation;
  }

  private async run(generation: number): Promise<void> {
    let delay = 50;
    let first = true;
    while (this.live(generation)) {
      let stream: ChangeStream<SnapshotDocument> | undefined;
      const resuming = this.resumeToken !== undefined;
      try {
        const collection = await this.collection();
        if (!this.live(generation)) return;
        stream = collection.watch<SnapshotDocument>(PIPELINE, {
          fullDocument: "updateLookup",
          maxAwaitTimeMS: 1000,
          ...(this.resumeToken ? { resumeAfter: this.resumeToken } : {}),
        });
        this.stream = stream;
        const early = await stream.tryNext(); // sends the aggregate: the stream is now established
        if (!this.live(generation)) return;
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

  private handle(change: ChangeStreamDocument<SnapshotDocument>): void {
    if (!("documentKey" in change) || !change.documentKey) return;
    const id = String((change.documentKey as { _id: unknown })._id);
    if (!this.channels.has(id)) return;
    const doc = "fullDocument" in change ? change.fullDocument : undefined;
    if (doc && typeof doc.version === "number" && typeof doc.status === "string") {
      this.deliver(id, { status: doc.status, version: doc.version });
    } else {
      void this.reread(id);
    }
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
