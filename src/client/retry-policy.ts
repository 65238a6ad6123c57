import type { Code } from "@connectrpc/connect";

/**
 * How the client retries what may not have happened (see `docs/client-typescript.md`,
 * "Retries"): a call or stream that failed with UNAVAILABLE, a transport
 * failure (reset, refused or closed connection, HTTP/2 RST_STREAM) not caused
 * by the caller's own signal or deadline, or a stream that ended before the
 * output it was waiting for. Every field is optional; the defaults are
 * {@link DEFAULT_RETRY_POLICY}.
 *
 * The budget is bounded by time: a call keeps retrying for up to
 * `maxElapsedMs` after its first failure (counted afresh once it makes
 * progress), never past its own `timeoutMs` or `signal`, so it rides out a
 * server restart of a few seconds. `maxAttempts` is an optional extra bound.
 */
export interface RetryPolicy {
  /**
   * How long a call keeps retrying, in ms from its first failure (default 30 000): no retry
   * starts later than this after it. A stream or conversation that made progress (a chunk, a
   * turn) since its last failure counts afresh. `Infinity`: bounded by the call's deadline only.
   */
  maxElapsedMs?: number;
  /**
   * Attempts per call, the first included (default `Infinity`: bounded by time alone; 1 never
   * retries). A stream or conversation that made progress since its last failure counts afresh.
   */
  maxAttempts?: number;
  /** The first retry's backoff cap in ms (default 100). */
  initialBackoffMs?: number;
  /** The largest backoff cap in ms (default 2000), reached from the sixth retry on. */
  maxBackoffMs?: number;
}

/**
 * The retry defaults: retry for up to 30 s after the first failure, as many attempts as fit,
 * backoff caps 100 ms doubling up to 2 s, full jitter.
 */
export const DEFAULT_RETRY_POLICY: Readonly<Required<RetryPolicy>> = Object.freeze({
  maxElapsedMs: 30_000,
  maxAttempts: Infinity,
  initialBackoffMs: 100,
  maxBackoffMs: 2000,
});

/** What `onRetry` is told before each retry. */
export interface RetryEvent {
  /** The RPC retried, e.g. "Run", "Chat", "GetSnapshot". */
  procedure: string;
  /** The attempt about to start (2 for the first retry; counted since the call last made progress). */
  attempt: number;
  /** The backoff before it, in ms. */
  delayMs: number;
  /** When the retry starts, in ms after the first failure since the call last made progress: at most `maxElapsedMs`. */
  elapsedMs: number;
  /** The failed attempt's code (`Code` of `@connectrpc/connect`). */
  code: Code;
  /** The failed attempt's message. */
  message: string;
}

/** The retry options of `createAgentClient` / `new AgentClient`. */
export interface RetryOptions {
  /** The retry policy (default {@link DEFAULT_RETRY_POLICY}); `false` turns retries off: every failure surfaces at once. */
  retry?: RetryPolicy | false;
  /** Called before each retry (after the backoff is chosen, before it is waited). Exceptions it throws are ignored. */
  onRetry?: (event: RetryEvent) => void;
}

/** A policy with every default filled in; `false` becomes one attempt. */
export function resolveRetryPolicy(policy: RetryPolicy | false | undefined): Readonly<Required<RetryPolicy>> {
  if (policy === false) return { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 };
  return {
    maxElapsedMs: Math.max(0, policy?.maxElapsedMs ?? DEFAULT_RETRY_POLICY.maxElapsedMs),
    maxAttempts: Math.max(1, Math.floor(policy?.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts)),
    initialBackoffMs: Math.max(0, policy?.initialBackoffMs ?? DEFAULT_RETRY_POLICY.initialBackoffMs),
    maxBackoffMs: Math.max(0, policy?.maxBackoffMs ?? DEFAULT_RETRY_POLICY.maxBackoffMs),
  };
}

/**
 * The backoff before retry number `retry` (1 for the first): full jitter,
 * uniform in [0, min(maxBackoff, initialBackoff * 2^(retry-1))).
 */
export function backoffDelayMs(policy: Readonly<Required<RetryPolicy>>, retry: number, random = Math.random): number {
  const cap = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** Math.min(30, Math.max(0, retry - 1)));
  return Math.floor(random() * cap);
}
