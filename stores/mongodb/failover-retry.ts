import { AgentError } from "../../src/errors/agent-error.js";
import { isTransientMongoError, isUnsentError, mongoError } from "./mongo-errors.js";

/** How long, and until when, a store call keeps retrying across a failover. */
export interface FailoverBudget {
  /** Epoch ms after which the call gives up: the failover window or the caller's deadline, whichever is first. */
  deadline: number;
  /** True once the store is closed (stop retrying). */
  closed: () => boolean;
}

/**
 * How many times in a row a call may find no server to send to (server
 * selection timed out, the pool was cleared) before it fails: the first
 * selection timeout may end just before an election does (an unplanned one
 * takes up to ~12 s: 10 s electionTimeoutMillis plus the vote), the second
 * means the store is down, and the caller hears UNAVAILABLE after about
 * 2 × serverSelectionTimeoutMS instead of waiting out the whole window.
 */
export const UNSENT_ATTEMPTS = 2;

/** Pause before the next attempt: 100 ms doubling to 2 s, ±50 % jitter. */
function failoverPause(attempt: number): Promise<void> {
  const ms = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** True for an UNAVAILABLE (mapped or raw driver) error. */
function isTransient(err: unknown): boolean {
  return (err instanceof AgentError && err.status === "UNAVAILABLE") || isTransientMongoError(err);
}

/** The driver error beneath an AgentError (its cause), or the error itself. */
function driverCause(err: unknown): unknown {
  return err instanceof AgentError && err.cause !== undefined ? err.cause : err;
}

/**
 * Runs `op` (a read, or a write that is safe to repeat: idempotent, or
 * recognised by its token when it already landed), retrying transient
 * failures (a step-down, a node not primary, a dropped connection, a
 * write-concern timeout) with backoff until `budget.deadline`, so a call
 * rides out a replica-set election. A call that twice in a row found no
 * server to send to ({@link UNSENT_ATTEMPTS}) fails at once: the store is
 * down, not electing. Errors are mapped to AgentErrors (UNAVAILABLE for the
 * transient ones, with `action` in the message); non-transient errors are
 * never retried.
 */
export async function acrossFailover<T>(action: string, budget: FailoverBudget, op: () => Promise<T>): Promise<T> {
  let unsent = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (!isTransient(err)) throw mongoError(err, action);
      unsent = isUnsentError(driverCause(err)) ? unsent + 1 : 0;
      if (unsent >= UNSENT_ATTEMPTS || budget.closed() || Date.now() >= budget.deadline) throw mongoError(err, action);
      await failoverPause(attempt);
    }
  }
}
