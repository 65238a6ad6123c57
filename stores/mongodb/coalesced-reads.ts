/**
 * Coalesces identical reads: every call with the same key made before the
 * read is sent shares its one answer (fan-out in process: N followers of one
 * job woken by one append cost one query). A call made after the read was
 * sent starts a new one, so an answer never predates its call. The read is
 * sent on the next turn of the event loop (`setImmediate`), which is what
 * lets the calls of one wake-up meet. Answers are shared: callers must treat
 * them as read-only.
 */
export class CoalescedReads<T> {
  private readonly queued = new Map<string, Promise<T>>();
  private sentCount = 0;

  /** Reads sent (diagnostics, tests). */
  get sent(): number {
    return this.sentCount;
  }

  /** `read()` once for every call with `key` until it is sent; resolves (or rejects) as it does. */
  run(key: string, read: () => Promise<T>): Promise<T> {
    const queued = this.queued.get(key);
    if (queued) return queued;
    const answer = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.queued.delete(key);
      this.sentCount++;
      return read();
    });
    this.queued.set(key, answer);
    return answer;
  }
}
