/**
 * The lifecycle shared by the stores' subscription iterables
 * (`StatusChannel`, `WakeChannel`): the channel ends when `signal` aborts or
 * `close()` is called, runs `onClose` exactly once when it ends (never from
 * inside the constructor: a channel created with an already-aborted signal
 * starts closed, so check {@link isClosed} before registering it anywhere),
 * and lets its single consumer sleep until there is news or the end.
 */
export abstract class SignalBoundChannel {
  private ended = false;
  private resume: (() => void) | undefined;
  private readonly onAbort = (): void => this.close();

  constructor(
    private readonly signal: AbortSignal,
    private readonly onClose: () => void,
  ) {
    // Already aborted: born closed; nothing is registered yet, so onClose is not called.
    if (signal.aborted) this.ended = true;
    else signal.addEventListener("abort", this.onAbort, { once: true });
  }

  /** True once the channel has ended. */
  get isClosed(): boolean {
    return this.ended;
  }

  /** Ends the iterable and releases its resources (through `onClose`). Idempotent. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.signal.removeEventListener("abort", this.onAbort);
    this.resume?.();
    this.onClose();
  }

  /** Wakes the consumer sleeping in {@link nextNotice}, if any. */
  protected notify(): void {
    this.resume?.();
  }

  /** Resolves at the next {@link notify} or {@link close}. */
  protected async nextNotice(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.resume = resolve;
    });
    this.resume = undefined;
  }
}
