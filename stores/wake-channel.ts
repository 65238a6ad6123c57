import type { AgentError } from "../src/errors/agent-error.js";

/**
 * The iterable behind every store's `watchChunks`: yields once per
 * {@link WakeChannel.wake} call, coalescing wake-ups the consumer has not
 * taken yet into one (a wake-up says "read again", not what changed). It
 * ends when the signal aborts or {@link WakeChannel.close} is called
 * (pending wake-ups are dropped), or throws the error given to
 * {@link WakeChannel.fail}.
 */
export class WakeChannel implements AsyncIterable<void> {
  private pending = false;
  private closed = false;
  private failure: AgentError | undefined;
  private resume: (() => void) | undefined;
  private readonly onAbort = (): void => this.close();

  /**
   * `onClose` runs once when the channel ends (abort, close, fail, or the
   * consumer's return), never from inside the constructor: a channel created
   * with an already-aborted signal starts closed (check {@link isClosed}
   * before registering it anywhere).
   */
  constructor(
    private readonly signal: AbortSignal,
    private readonly onClose: () => void,
  ) {
    if (signal.aborted) this.closed = true;
    else signal.addEventListener("abort", this.onAbort, { once: true });
  }

  /** True once the channel has ended. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Schedules one wake-up (merged with one not yet taken). No-op once closed. */
  wake(): void {
    if (this.closed) return;
    this.pending = true;
    this.resume?.();
  }

  /** Ends the channel with `error`: the consumer's next step throws it. No-op once closed. */
  fail(error: AgentError): void {
    if (this.closed) return;
    this.failure = error;
    this.close();
  }

  /** Ends the iterable and releases its resources (through `onClose`). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.signal.removeEventListener("abort", this.onAbort);
    this.resume?.();
    this.onClose();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<void> {
    try {
      for (;;) {
        if (this.closed) {
          if (this.failure) throw this.failure;
          return;
        }
        if (this.pending) {
          this.pending = false;
          yield;
          continue;
        }
        await new Promise<void>((resolve) => {
          this.resume = resolve;
        });
        this.resume = undefined;
      }
    } finally {
      this.close();
    }
  }
}
