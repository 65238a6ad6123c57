import { FifoQueue } from "./fifo-queue.js";

/** Options of an {@link AsyncChannel}. */
export interface AsyncChannelOptions {
  /**
   * How many queued items make the channel full: {@link AsyncChannel.whenWritable}
   * then waits until the reader took half of them. `push` still queues past it
   * (a writer that does not wait is not refused). Default: unbounded.
   */
  capacity?: number;
}

/**
 * A single-consumer async queue. `push` never blocks and costs O(1) however
 * many items wait; iteration yields items in order and ends after `close()`,
 * or throws the error passed to `fail()` once the queued items are drained.
 * With a `capacity`, writers that honour backpressure wait in
 * {@link whenWritable} while the channel is full.
 */
export class AsyncChannel<T> implements AsyncIterable<T> {
  private readonly items = new FifoQueue<T>();
  private readonly capacity: number;
  private waiter: (() => void) | undefined;
  private closed = false;
  private error: unknown;
  private failed = false;
  /** The reader ended its iteration early: nobody takes items any more, so nobody waits for room. */
  private abandoned = false;
  private writable: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(options: AsyncChannelOptions = {}) {
    this.capacity = options.capacity ?? Number.POSITIVE_INFINITY;
  }

  /** Queues an item. Returns false (and drops it) when the channel is closed. */
  push(item: T): boolean {
    if (this.closed) return false;
    this.items.push(item);
    this.wake();
    return true;
  }

  /**
   * Undefined while the channel has room (the fast path: nothing to await);
   * when `capacity` items are queued, a promise that resolves once the reader
   * took half of them, the channel closed, or the reader left. It resolves in
   * a later event-loop turn (`setImmediate`), so a writer that fills the
   * channel faster than a reader in the same process takes lets I/O and
   * timers run between batches. Never rejects.
   */
  whenWritable(): Promise<void> | undefined {
    if (this.items.size < this.capacity || this.closed || this.abandoned) return undefined;
    if (!this.writable) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.writable = { promise, resolve };
    }
    return this.writable.promise;
  }

  /** Ends the channel after the queued items. Idempotent. */
  close(): void {
    this.closed = true;
    this.wake();
    this.releaseWriters();
  }

  /** Ends the channel with an error, delivered after the queued items. First call wins. */
  fail(error: unknown): void {
    if (this.closed) return;
    this.failed = true;
    this.error = error;
    this.close();
  }

  /** True once close() or fail() was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The queued, unconsumed items, in order (a copy). */
  queued(): T[] {
    return this.items.toArray();
  }

  /** Number of queued, unconsumed items. */
  get size(): number {
    return this.items.size;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  private take(): T {
    const item = this.items.shift() as T;
    if (this.writable && this.items.size <= this.capacity / 2) this.releaseWriters();
    return item;
  }

  private releaseWriters(): void {
    const writable = this.writable;
    if (!writable) return;
    this.writable = undefined;
    nextTurn(writable.resolve);
  }

  /**
   * Iterates the channel: each `next()` resolves at once while items are
   * queued (no async-generator hops per item). After the failure was thrown,
   * or after `return()` or `throw()`, it reports done (and writers no longer
   * wait for room).
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    let finished = false;
    const leave = (): void => {
      finished = true;
      this.abandoned = true;
      this.releaseWriters();
    };
    const next = (): Promise<IteratorResult<T>> => {
      if (finished) return Promise.resolve({ done: true, value: undefined });
      if (this.items.size > 0) return Promise.resolve({ done: false, value: this.take() });
      if (this.closed) {
        finished = true;
        return this.failed ? Promise.reject(this.error) : Promise.resolve({ done: true, value: undefined });
      }
      return new Promise<void>((resolve) => (this.waiter = resolve)).then(next);
    };
    return {
      next,
      // Like an async generator's: ends the iteration and rethrows (connect aborts a request stream so).
      throw: (err?: unknown) => {
        leave();
        return Promise.reject(err);
      },
      return: (value?: unknown) => {
        leave();
        return Promise.resolve({ done: true, value: value as T });
      },
    };
  }
}

/** Runs `fn` in a later event-loop turn, after pending I/O (`setImmediate` where there is one, as in Node.js). */
const nextTurn: (fn: () => void) => void =
  typeof setImmediate === "function" ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0);
