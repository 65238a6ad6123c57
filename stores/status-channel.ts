import type { SnapshotStatus } from "../src/types/snapshot.js";

/** One observation of a snapshot's status; `version` orders observations of one row. */
export interface StatusObservation {
  status: SnapshotStatus;
  /** Monotonic per row (store-defined); observations at or below the last delivered version are dropped. */
  version: number;
}

/**
 * The per-subscriber dedup gate and queue behind every store's
 * `subscribeStatus`. Observations may arrive from several sources (in-process
 * writes, a file watcher, a poller, a change stream, a re-read after resume);
 * the channel delivers each status change exactly once and in order: it drops
 * an observation whose version is not newer than the last delivered one, or
 * whose status equals the last delivered status. The iterable ends when the
 * signal aborts or {@link StatusChannel.close} is called.
 */
export class StatusChannel implements AsyncIterable<SnapshotStatus> {
  private lastVersion = Number.NEGATIVE_INFINITY;
  private lastStatus: SnapshotStatus | undefined;
  private readonly queue: SnapshotStatus[] = [];
  private wake: (() => void) | undefined;
  private closed = false;
  private failure: Error | undefined;
  private readonly onAbort = (): void => this.close();

  /**
   * `onClose` runs once when the channel ends (abort, close, or consumer
   * return), never from inside the constructor: a channel created with an
   * already-aborted signal starts closed (check {@link isClosed} before registering it).
   */
  constructor(
    private readonly signal: AbortSignal,
    private readonly onClose: () => void,
  ) {
    // Already aborted: born closed; nothing is registered yet, so onClose is not called.
    if (signal.aborted) this.closed = true;
    else signal.addEventListener("abort", this.onAbort, { once: true });
  }

  /** True once the channel has ended. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Offers an observation; returns true when it was queued for delivery. */
  push(observation: StatusObservation): boolean {
    if (this.closed) return false;
    if (observation.version <= this.lastVersion) return false;
    this.lastVersion = observation.version;
    if (observation.status === this.lastStatus) return false;
    this.lastStatus = observation.status;
    this.queue.push(observation.status);
    this.wake?.();
    return true;
  }

  /**
   * Ends the iterable with `err` (after the statuses already queued) and
   * releases the subscription: the store can no longer deliver (e.g. its
   * change stream failed for good). No-op once closed.
   */
  fail(err: Error): void {
    if (this.closed) return;
    this.failure = err;
    this.close();
  }

  /** Ends the iterable and releases the subscription. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.signal.removeEventListener("abort", this.onAbort);
    this.wake?.();
    this.onClose();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SnapshotStatus> {
    try {
      for (;;) {
        if (this.queue.length > 0) {
          yield this.queue.shift()!;
          continue;
        }
        if (this.closed) {
          if (this.failure) throw this.failure;
          return;
        }
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
      }
    } finally {
      this.close();
    }
  }
}
