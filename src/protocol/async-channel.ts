/**
 * An unbounded single-consumer async queue. `push` never blocks; iteration
 * yields items in order and ends after `close()`, or throws the error passed to
 * `fail()` once the queued items are drained.
 */
export class AsyncChannel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;
  private error: unknown;
  private failed = false;

  /** Queues an item. Returns false (and drops it) when the channel is closed. */
  push(item: T): boolean {
    if (this.closed) return false;
    this.items.push(item);
    this.wake();
    return true;
  }

  /** Ends the channel after the queued items. Idempotent. */
  close(): void {
    this.closed = true;
    this.wake();
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
    return [...this.items];
  }

  /** Number of queued, unconsumed items. */
  get size(): number {
    return this.items.length;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /**
   * Iterates the channel: each `next()` resolves at once while items are
   * queued (no async-generator hops per item). After the failure was thrown,
   * or after `return()` or `throw()`, it reports done.
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    let finished = false;
    const next = (): Promise<IteratorResult<T>> => {
      if (finished) return Promise.resolve({ done: true, value: undefined });
      if (this.items.length > 0) return Promise.resolve({ done: false, value: this.items.shift() as T });
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
        finished = true;
        return Promise.reject(err);
      },
      return: (value?: unknown) => {
        finished = true;
        return Promise.resolve({ done: true, value: value as T });
      },
    };
  }
}
