/**
 * Coalesces identical reads: every call with the same key made before the
 * read is sent shares its one answer (fan-out in process: N followers of one
 * job woken by one append cost one query). A call made after the read was
 * sent starts a new one, so an answer never predates its call. Answers are
 * shared: callers must treat them as read-only.
 */
export class CoalescedReads<T> {
  private readonly queued = new Map<string, Promise<T>>();
  private sentCount = 0;

  /** Reads sent (diagnostics, tests). */
  get sent(): number {
    return this.sentCount;
  }

  /**
   * `read(sending)` once for every call with `key` until the read calls
   * `sending()` (right before it issues its query; later calls start a new
   * read). With `defer`, the read starts on the next turn of the event loop
   * (`setImmediate`), which lets the calls of one wake-up meet; without, at
   * once (callers that must not be overtaken by a write made after them).
   */
  run(key: string, read: (sending: () => void) => Promise<T>, defer: boolean): Promise<T> {
    const queued = this.queued.get(key);
    if (queued) return queued;
    const sending = (): void => {
      if (this.queued.get(key) === answer) this.queued.delete(key);
      this.sentCount++;
    };
    const started = defer
      ? new Promise<void>((resolve) => setImmediate(resolve)).then(() => read(sending))
      : read(sending); // synchronously: its first await is its request for the collection
    const answer: Promise<T> = started.finally(() => {
      if (this.queued.get(key) === answer) this.queued.delete(key);
    });
    this.queued.set(key, answer);
    return answer;
  }
}
