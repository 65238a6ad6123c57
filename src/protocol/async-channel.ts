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

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift() as T;
        continue;
      }
      if (this.closed) {
        if (this.failed) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }
}
