/**
 * Coalesces the fsyncs of one file or directory: {@link request} resolves after
 * a run of `sync` that started after the request was made, and requests made
 * while a run is in flight share the single run queued behind it. Under many
 * concurrent writers the file is synced about once per fsync latency rather
 * than once per write, with the same guarantee to every writer. A failed run
 * rejects the requests it served; the next request starts a new run.
 */
export class CoalescedSync {
  private running: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(private readonly sync: () => Promise<void>) {}

  /** Resolves once a sync started after this call has finished. */
  request(): Promise<void> {
    if (!this.running) {
      const running = this.sync().finally(() => this.settle(running));
      this.running = running;
      return running;
    }
    if (!this.next) {
      const next: Promise<void> = this.running
        .catch(() => undefined)
        .then(() => this.sync())
        .finally(() => this.settle(next));
      this.next = next;
    }
    return this.next;
  }

  /** True while a sync runs or is queued. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  private settle(finished: Promise<void>): void {
    if (this.running !== finished) return;
    this.running = this.next;
    this.next = undefined;
  }
}
