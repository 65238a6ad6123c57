import type { ChangeStream, ClientSession, Collection, Document, MongoClient, ResumeToken, Timestamp } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { isChangeStreamUnsupported } from "./change-stream-support.js";
import type { StoreLogger } from "./store-logger.js";
import { closedByServer, endingOfError, endingOfEvent, type StreamEnding } from "./stream-endings.js";

/** Pause after an empty getMore batch (a server that answers getMore at once, like mongo-java-server, is polled ~40 times a second). */
const IDLE_PAUSE_MS = 25;
/** First pause before reopening an ended stream; doubled (up to {@link MAX_REOPEN_DELAY_MS}) while streams keep ending young. */
const MIN_REOPEN_DELAY_MS = 50;
const MAX_REOPEN_DELAY_MS = 2_000;
/** A stream that lived this long ended "normally": the next reopen starts at the shortest pause again. */
const STABLE_STREAM_MS = 5_000;
/** How long the server holds each getMore of an idle stream. */
const MAX_AWAIT_MS = 1_000;

/**
 * The cluster time a change stream started at (the `operationTime` of the
 * server's answer to its aggregate), or undefined when the server sent none.
 * A read made with `afterClusterTime` ≥ it sees every write the stream will
 * not deliver (see {@link readAfter}).
 */
export type StreamStart = Timestamp | undefined;

/** What a {@link ChangeStreamHub} delivers to the one component it serves. */
export interface HubSubscriber {
  /**
   * The stream is (again) established from `start`: every change after it
   * arrives as an event; the subscriber re-reads what it watches at a time
   * no earlier than `start` ({@link readAfter}) to cover what came before.
   * Called after each open, reopen and resume the driver made by itself; the
   * hub waits for it before delivering further events.
   */
  established(start: StreamStart): Promise<void>;
  /** One change event (not one that ends the stream: the hub handles those). */
  event(change: Document): void;
  /** The deployment cannot run change streams (or the store cannot open): the hub has stopped for good. */
  failed(err: AgentError): void;
}

/** What a {@link ChangeStreamHub} watches and how it reports. */
export interface HubSource {
  /** The watched collection, once the store is open (rejects with the store's opening error). */
  collection(): Promise<Collection<Document>>;
  /** The server-side filter and projection (must let the {@link TERMINAL_EVENTS} through). */
  pipeline: Document[];
  /** What the stream carries, for log lines: "chunk", "status". */
  label: string;
  /** Fields for its log lines (what it serves, e.g. how many logs are watched). */
  fields?: () => Record<string, unknown>;
  /** The FAILED_PRECONDITION error for a deployment that cannot run change streams. */
  unsupported(err: unknown): AgentError;
  logger?: StoreLogger;
}

/** How the hub's stream last ended (diagnostics, tests). */
export interface HubEnding extends StreamEnding {
  /** Epoch ms of the ending. */
  at: number;
}

/**
 * The driver's cursor behind a change stream: the driver (7.x) resumes a
 * stream after a resumable error by itself, inside `tryNext`, replacing this
 * cursor; a new cursor object is how the hub notices a resume.
 */
function driverCursorOf(stream: ChangeStream<Document, Document>): unknown {
  return (stream as unknown as { cursor?: unknown }).cursor;
}

/**
 * One change stream on one collection for a whole process (a store
 * instance), shared by every local subscriber of that collection: the open,
 * reopen and resume logic in one place. Started by the first subscriber
 * ({@link start}), stopped by the last ({@link stop}).
 *
 * Guarantees: at most one change stream (one aggregate cursor, one pooled
 * connection while its getMore waits) at a time; after each open, reopen and
 * driver-made resume, {@link HubSubscriber.established} runs with the
 * stream's start time before any later event is delivered, so a re-read at or
 * after that time plus the events miss no change. The stream is reopened
 * however it ends (an error, from its resume token only when transient; an
 * invalidating event; a cursor the server closed; {@link requestReopen}),
 * with a growing pause while reopens keep failing; the first failure of a
 * row and each end of an established stream are logged. A deployment without
 * change streams ends it for good ({@link HubSubscriber.failed}).
 */
export class ChangeStreamHub {
  private stream: ChangeStream<Document, Document> | undefined;
  private established = false;
  private establishedAt = 0;
  private generation = 0;
  private running = false;
  private token: ResumeToken | undefined;
  private reopenRequest: string | undefined;
  private reopenCount = 0;
  private openCount = 0;
  private ending: HubEnding | undefined;
  private stopWaiting: (() => void) | undefined;
  /** Loops started and not yet finished (a stopped one finishes once its stream is closed). */
  private loops = 0;
  /** Settles once the current loop has closed its stream. */
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly source: HubSource,
    private readonly subscriber: HubSubscriber,
  ) {}

  /** True while the stream is established on the server and its subscriber caught up. */
  get isOpen(): boolean {
    return this.established;
  }

  /** True while the hub's loop runs (holding, opening or closing a stream); false once a stopped hub has closed it. */
  get isRunning(): boolean {
    return this.loops > 0;
  }

  /** Change streams this hub opened (aggregates sent, reopens and driver resumes included). */
  get opened(): number {
    return this.openCount;
  }

  /** How many times an ended stream was reopened or resumed. */
  get reopens(): number {
    return this.reopenCount;
  }

  /** How the stream last ended, or undefined if it never did. */
  get lastEnding(): HubEnding | undefined {
    return this.ending;
  }

  /** Settles once the hub's loop has ended and its stream is closed. */
  get done(): Promise<void> {
    return this.loop;
  }

  /** Starts the stream (idempotent). */
  start(): void {
    if (this.running) return;
    this.running = true;
    const generation = ++this.generation;
    const previous = this.loop;
    this.loops++;
    this.loop = previous.then(() => this.run(generation)).finally(() => this.loops--);
  }

  /** Stops the stream and closes it (idempotent); a later {@link start} opens a new one from now. */
  stop(): void {
    if (!this.running) return;
    this.running = false;
    this.generation++;
    this.token = undefined;
    this.reopenRequest = undefined;
    this.established = false;
    this.stopWaiting?.();
    void this.stream?.close().catch(() => undefined);
  }

  /**
   * Asks for the stream to be reopened from now: the connection to the
   * primary was lost at `lostAt` and is back (a server that lost its history
   * may resume silently past changes). Ignored when the stream was
   * established after `lostAt`.
   */
  requestReopen(reason: string, lostAt: number): void {
    if (!this.running) return;
    if (this.established && this.establishedAt >= lostAt) return;
    this.reopenRequest = reason;
  }

  private live(generation: number): boolean {
    return this.running && generation === this.generation;
  }

  private async run(generation: number): Promise<void> {
    let delay = MIN_REOPEN_DELAY_MS;
    let failedAttempts = 0;
    // Opens on the next turn of the event loop: after the reads its first subscribers queued (their baselines).
    await new Promise((resolve) => setImmediate(resolve));
    while (this.live(generation)) {
      let ending: StreamEnding | undefined;
      let stream: ChangeStream<Document, Document> | undefined;
      let livedFrom = 0;
      try {
        const collection = await this.source.collection();
        if (!this.live(generation)) return;
        stream = collection.watch<Document, Document>(this.source.pipeline, {
          maxAwaitTimeMS: MAX_AWAIT_MS,
          ...(this.token ? { resumeAfter: this.token } : {}),
        });
        let start: StreamStart;
        onStreamStart(stream, (at) => (start = at));
        this.stream = stream;
        this.openCount++;
        const early = await stream.tryNext(); // sends the aggregate: the stream is now established
        if (!this.live(generation)) return;
        if (early === null && stream.closed) throw closedAtOpen();
        if (this.opened > 1) this.reopenCount++;
        await this.subscriber.established(start);
        if (!this.live(generation)) return;
        this.established = true;
        this.establishedAt = livedFrom = Date.now();
        this.reopenRequest = undefined;
        failedAttempts = 0;
        let cursor = driverCursorOf(stream);
        if (early) ending = this.consume(early);
        this.token = stream.resumeToken ?? this.token;
        while (this.live(generation) && !ending) {
          if (this.reopenRequest !== undefined) {
            ending = { reason: this.reopenRequest, resume: false };
            break;
          }
          const change = await stream.tryNext();
          this.token = stream.resumeToken ?? this.token;
          if (driverCursorOf(stream) !== cursor) {
            cursor = driverCursorOf(stream);
            this.openCount++;
            this.reopenCount++;
            this.establishedAt = Date.now();
            start = resumedStart(stream) ?? start; // a resume from a token keeps the first start (older: still gapless)
            await this.subscriber.established(start);
          }
          if (change) ending = this.consume(change);
          else if (stream.closed) ending = closedByServer();
          else await this.pause(IDLE_PAUSE_MS);
        }
      } catch (err) {
        if (!this.live(generation)) return;
        const fatal = this.fatalError(err);
        if (fatal) {
          this.running = false;
          this.subscriber.failed(fatal);
          return;
        }
        ending = (err as { closedAtOpen?: boolean }).closedAtOpen
          ? { reason: (err as Error).message, resume: false }
          : endingOfError(err);
      } finally {
        if (this.stream === stream) {
          this.stream = undefined;
          this.established = false;
        }
        await stream?.close().catch(() => undefined);
      }
      if (!this.live(generation) || !ending) return;
      if (!ending.resume) this.token = undefined;
      if (livedFrom === 0) failedAttempts++;
      this.ended(ending, failedAttempts);
      delay =
        livedFrom > 0 && Date.now() - livedFrom >= STABLE_STREAM_MS
          ? MIN_REOPEN_DELAY_MS
          : Math.min(delay * 2, MAX_REOPEN_DELAY_MS);
      await this.pause(delay);
    }
  }

  /** The error that ends the hub for good: the store cannot open (another format, no change streams). */
  private fatalError(err: unknown): AgentError | undefined {
    if (err instanceof AgentError && err.status === "FAILED_PRECONDITION") return err;
    if (isChangeStreamUnsupported(err)) return this.source.unsupported(err);
    return undefined;
  }

  private consume(change: Document): StreamEnding | undefined {
    const ending = endingOfEvent(change);
    if (ending) return ending;
    this.subscriber.event(change);
    return undefined;
  }

  /** Records and logs an ending: every end of an established stream, and the first of a row of failed (re)opens. */
  private ended(ending: StreamEnding, failedAttempts: number): void {
    this.ending = { ...ending, at: Date.now() };
    if (failedAttempts > 1) return;
    this.source.logger?.warn(
      {
        reason: ending.reason,
        resume: ending.resume,
        ...(ending.code !== undefined ? { code: ending.code } : {}),
        ...this.source.fields?.(),
      },
      failedAttempts === 1
        ? `MongoDB ${this.source.label} change stream could not be opened; retrying`
        : `MongoDB ${this.source.label} change stream ended; reopening it`,
    );
  }

  private pause(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.stopWaiting = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** The driver's cursor behind a stream, as far as the start time goes. */
interface StartingCursor {
  once?(event: "init", listener: (response: { operationTime?: Timestamp }) => void): void;
  startAtOperationTime?: Timestamp | null;
}

/**
 * Calls `set` with the operationTime of the server's answer to the stream's
 * aggregate, once the stream sends it (the driver's cursor emits the answer
 * as "init"; the ChangeStream does not forward it). Attach before the first
 * `tryNext`.
 */
export function onStreamStart(stream: ChangeStream<Document, Document>, set: (start: StreamStart) => void): void {
  (driverCursorOf(stream) as StartingCursor | undefined)?.once?.("init", (response) => set(response.operationTime));
}

/** The start of a cursor the driver opened by itself to resume a stream (known when it resumed from a time, not a token). */
export function resumedStart(stream: ChangeStream<Document, Document>): StreamStart {
  return (driverCursorOf(stream) as StartingCursor | undefined)?.startAtOperationTime ?? undefined;
}

function closedAtOpen(): Error {
  return Object.assign(new Error("the server closed the change stream as it opened"), { closedAtOpen: true });
}

/**
 * Runs `read` in a causally consistent session whose operation time is the
 * stream's start, so each of its reads carries `readConcern.afterClusterTime`
 * = `start` (with the store's majority level): the server answers once its
 * majority snapshot has reached the stream's start, so a write the stream
 * starts after is in what the read sees. Without a start (a server that sent
 * no operationTime), or on a deployment without sessions (the driver refuses
 * the session: MongoCompatibilityError), the read runs without one.
 */
export async function readAfter<T>(
  client: MongoClient,
  start: StreamStart,
  read: (session: ClientSession | undefined) => Promise<T>,
): Promise<T> {
  if (!start) return read(undefined);
  const session = client.startSession({ causalConsistency: true });
  try {
    session.advanceOperationTime(start);
    return await read(session);
  } catch (err) {
    if ((err as { name?: unknown } | undefined)?.name !== "MongoCompatibilityError") throw err;
    return read(undefined);
  } finally {
    await session.endSession().catch(() => undefined);
  }
}
