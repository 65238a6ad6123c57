import type { AgentError } from "../src/errors/agent-error.js";
import { SignalBoundChannel } from "./signal-bound-channel.js";

/**
 * The iterable behind every store's `watchChunks`: yields once per
 * {@link WakeChannel.wake} call, coalescing wake-ups the consumer has not
 * taken yet into one (a wake-up says "read again", not what changed). It
 * ends when the signal aborts or {@link WakeChannel.close} is called
 * (pending wake-ups are dropped), or throws the error given to
 * {@link WakeChannel.fail}. Its lifecycle (signal, `onClose`) is
 * {@link SignalBoundChannel}'s.
 */
export class WakeChannel extends SignalBoundChannel implements AsyncIterable<void> {
  private pending = false;
  private failure: AgentError | undefined;

  /** Schedules one wake-up (merged with one not yet taken). No-op once closed. */
  wake(): void {
    if (this.isClosed) return;
    this.pending = true;
    this.notify();
  }

  /** Ends the channel with `error`: the consumer's next step throws it. No-op once closed. */
  fail(error: AgentError): void {
    if (this.isClosed) return;
    this.failure = error;
    this.close();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<void> {
    try {
      for (;;) {
        if (this.isClosed) {
          if (this.failure) throw this.failure;
          return;
        }
        if (this.pending) {
          this.pending = false;
          yield;
          continue;
        }
        await this.nextNotice();
      }
    } finally {
      this.close();
    }
  }
}
