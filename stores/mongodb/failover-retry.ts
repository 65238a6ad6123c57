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

const STALLED_BRAND = Symbol("agentd.StalledStoreCall");

/**
 * A store call whose attempt got no answer before its budget ran out: the
 * driver's operation was still waiting (on a connection that went silent:
 * reset by the network without the driver noticing, or dropped by a NAT or
 * load balancer), so the call gives up on it. A write of that attempt may
 * still land: a commit turns this into its unknown-outcome error.
 */
export class StalledStoreCall extends AgentError {
  private readonly [STALLED_BRAND] = true;

  /** Only errors made by this class (AgentError's own check would accept every AgentError). */
  static override [Symbol.hasInstance](value: unknown): value is StalledStoreCall {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[STALLED_BRAND] === true;
  }

  constructor(action: string) {
    super(
      "UNAVAILABLE",
      `MongoDB ${action} failed: the server did not answer within the store's failover window or the call's deadline (check that the server in the store URI is reachable, and see "A connection that goes silent" in docs/stores.md; retry later)`,
    );
    this.name = "StalledStoreCall";
  }
}

/**
 * The least time an attempt gets before it counts as stalled, whatever its
 * budget: a failover window of 0 (no retries) or a deadline about to pass
 * still lets a call that is answered finish.
 */
export const MIN_ATTEMPT_MS = 5_000;

/**
 * `attempt`, or a {@link StalledStoreCall} once `deadline` (epoch ms; at
 * least {@link MIN_ATTEMPT_MS} from now) has passed without its answer.
 */
export function beforeDeadline<T>(action: string, attempt: Promise<T>, deadline: number): Promise<T> {
  if (!Number.isFinite(deadline)) return attempt;
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StalledStoreCall(action)), Math.max(MIN_ATTEMPT_MS, deadline - Date.now()));
    timer.unref();
  });
  return Promise.race([attempt, stalled]).finally(() => clearTimeout(timer));
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
 * never retried. An attempt still unanswered at `budget.deadline` (and at
 * least {@link MIN_ATTEMPT_MS} after it began) is given up
 * ({@link StalledStoreCall}): a call never waits on a connection the driver
 * waits on forever.
 */
export async function acrossFailover<T>(action: string, budget: FailoverBudget, op: () => Promise<T>): Promise<T> {
  let unsent = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      return await beforeDeadline(action, op(), budget.deadline);
    } catch (err) {
      if (err instanceof StalledStoreCall) throw err;
      if (!isTransient(err)) throw mongoError(err, action);
      unsent = isUnsentError(driverCause(err)) ? unsent + 1 : 0;
      if (unsent >= UNSENT_ATTEMPTS || budget.closed() || Date.now() >= budget.deadline) throw mongoError(err, action);
      await failoverPause(attempt);
    }
  }
}
