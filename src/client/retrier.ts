import { ConnectError, type CallOptions } from "@connectrpc/connect";
import { isRetryable } from "./retryable-error.js";
import {
  backoffDelayMs,
  resolveRetryPolicy,
  type RetryEvent,
  type RetryOptions,
  type RetryPolicy,
} from "./retry-policy.js";

/**
 * A client's retry machinery: its policy, its `onRetry` hook and its retry
 * counter. One per `AgentClient`; every call asks it for a {@link RetryBudget}.
 */
export class Retrier {
  /** The policy in effect (defaults filled in; one attempt when retries are off). */
  readonly policy: Readonly<Required<RetryPolicy>>;
  private readonly onRetry: ((event: RetryEvent) => void) | undefined;
  private count = 0;

  /** Retries per `options` (default policy, on). */
  constructor(options: RetryOptions = {}) {
    this.policy = resolveRetryPolicy(options.retry);
    this.onRetry = options.onRetry;
  }

  /** Retries made so far by every call of the client. */
  get retries(): number {
    return this.count;
  }

  /** A fresh attempt budget for one call of `procedure` under `options` (its signal and timeout). */
  budget(procedure: string, options: CallOptions = {}): RetryBudget {
    return new RetryBudget(this, procedure, options);
  }

  /**
   * Runs `attempt` until it succeeds or fails with an error not worth
   * retrying, or the budget is spent; rejects with the last error.
   */
  async call<T>(
    procedure: string,
    options: CallOptions | undefined,
    attempt: (o: CallOptions) => Promise<T>,
  ): Promise<T> {
    const budget = this.budget(procedure, options);
    for (;;) {
      try {
        return await attempt(budget.callOptions());
      } catch (err) {
        if (!(await budget.retry(err))) throw err;
      }
    }
  }

  /** Counts a retry and tells the hook (whose exceptions are ignored). */
  noteRetry(event: RetryEvent): void {
    this.count++;
    try {
      this.onRetry?.(event);
    } catch {
      // the hook is for observing; it must not change the call's outcome
    }
  }
}

/**
 * The attempts one call (or one stream, or one conversation) may still make:
 * bounded by the policy's `maxElapsedMs` since the first failure after the
 * last progress (and its `maxAttempts`, unbounded by default), by the call's
 * deadline (`timeoutMs`, counted from the budget's creation) and by its
 * `signal`.
 */
export class RetryBudget {
  private attempt = 1;
  /** When the first failure since the last progress happened (ms since the epoch), or undefined. */
  private firstFailureAt: number | undefined;
  private readonly deadline: number | undefined;

  /** Created by {@link Retrier.budget}. */
  constructor(
    private readonly retrier: Retrier,
    /** The RPC this budget is for. */
    readonly procedure: string,
    private readonly options: CallOptions,
  ) {
    this.deadline = options.timeoutMs !== undefined ? Date.now() + options.timeoutMs : undefined;
  }

  /** The call options of the next attempt: the caller's, with the time left until the deadline as `timeoutMs`. */
  callOptions(): CallOptions {
    if (this.deadline === undefined) return this.options;
    return { ...this.options, timeoutMs: Math.max(1, this.deadline - Date.now()) };
  }

  /** The caller made progress (a chunk, a turn): the attempt count and the retry window start again. */
  progress(): void {
    this.attempt = 1;
    this.firstFailureAt = undefined;
  }

  /**
   * After a failed attempt: resolves true once the backoff has passed and
   * another attempt may start, false when `err` is not retryable (unless the
   * caller knows better: `alsoRetryable`), the attempts are spent, the retry
   * would start more than `maxElapsedMs` after the first failure since the
   * last progress, the backoff would pass the deadline, or the caller's
   * signal aborted (the caller then surfaces `err`).
   */
  async retry(err: unknown, alsoRetryable = false): Promise<boolean> {
    const signal = this.options.signal ?? undefined;
    if (signal?.aborted) return false;
    const policy = this.retrier.policy;
    if (!(alsoRetryable || isRetryable(err, signal)) || this.attempt >= policy.maxAttempts) return false;
    const now = Date.now();
    this.firstFailureAt ??= now;
    const delayMs = backoffDelayMs(policy, this.attempt);
    const elapsedMs = now + delayMs - this.firstFailureAt;
    if (elapsedMs > policy.maxElapsedMs) return false;
    if (this.deadline !== undefined && now + delayMs >= this.deadline) return false;
    this.attempt++;
    const error = ConnectError.from(err);
    this.retrier.noteRetry({
      procedure: this.procedure,
      attempt: this.attempt,
      delayMs,
      elapsedMs,
      code: error.code,
      message: error.rawMessage,
    });
    return sleep(delayMs, signal);
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
