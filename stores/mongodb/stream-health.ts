import type { Collection, Document } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";

/**
 * Failed opens in a row after which a change stream counts as failed for
 * good: with the reopen backoff (50 ms doubling to 2 s) about 7 s of a
 * stream that never got established, far past a reconnect or an election's
 * first seconds, while the driver's own resumes and stable reopens reset it.
 */
export const PERMANENT_AFTER_FAILED_OPENS = 8;

/** How the status change stream names itself to {@link StreamHealth}. */
export const STATUS_STREAM = "the status change stream";

/**
 * The store's health as its change streams see it, next to the server ping:
 * a stream that failed for good reports here (and its subscribers get
 * UNAVAILABLE), and the store's `ping` fails with that error (so the
 * server's health turns NOT_SERVING) until the stream, or a probe of one,
 * opens again.
 */
export class StreamHealth {
  private readonly problems = new Map<string, AgentError>();

  /**
   * `source` (e.g. "the status change stream") failed `failedOpens` times in a
   * row with `reason`: from {@link PERMANENT_AFTER_FAILED_OPENS} on, records
   * and returns the UNAVAILABLE error its subscribers and the health probe
   * get; undefined before.
   */
  failedOpen(source: string, failedOpens: number, reason: string): AgentError | undefined {
    if (failedOpens < PERMANENT_AFTER_FAILED_OPENS) return undefined;
    const error = new AgentError(
      "UNAVAILABLE",
      `${source} of the MongoDB store failed to open ${failedOpens} times in a row (last: ${reason}); status changes ` +
        "cannot be delivered: check that the replica set is reachable and that the store's user may run changeStream",
    );
    this.problems.set(source, error);
    return error;
  }

  /** `source` is established again. */
  recovered(source: string): void {
    this.problems.delete(source);
  }

  /** The first recorded failure, or undefined while every stream is healthy. */
  get problem(): AgentError | undefined {
    return this.problems.values().next().value;
  }

  /**
   * Opens (and closes) a change stream on `records`: when the server
   * establishes it, the status stream's failure is over ({@link recovered})
   * and it resolves true; false while streams still cannot open.
   */
  async probeStatusStream<T extends Document>(records: () => Promise<Collection<T>>): Promise<boolean> {
    try {
      const probe = (await records()).watch([], { maxAwaitTimeMS: 1 });
      try {
        await probe.tryNext();
      } finally {
        await probe.close();
      }
      this.recovered(STATUS_STREAM);
      return true;
    } catch {
      return false;
    }
  }
}
