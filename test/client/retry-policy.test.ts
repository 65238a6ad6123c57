import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { isRetryable } from "../../src/client/retryable-error.js";
import { backoffDelayMs, DEFAULT_RETRY_POLICY, resolveRetryPolicy } from "../../src/client/retry-policy.js";

function reset(code: Code): ConnectError {
  const cause = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", syscall: "read" });
  return new ConnectError("read ECONNRESET", code, undefined, undefined, cause);
}

describe("retry policy", () => {
  it("defaults to a 30 s retry window, no attempt limit, 100 ms initial and 2 s maximum backoff", () => {
    expect(resolveRetryPolicy(undefined)).toEqual({
      maxElapsedMs: 30_000,
      maxAttempts: Infinity,
      initialBackoffMs: 100,
      maxBackoffMs: 2000,
    });
    expect(DEFAULT_RETRY_POLICY.maxAttempts).toBe(Infinity);
    expect(resolveRetryPolicy({ maxAttempts: 5 })).toMatchObject({ maxAttempts: 5, maxElapsedMs: 30_000 });
  });

  it("reaches the 2 s backoff cap at the sixth retry, well inside the default window", () => {
    const policy = resolveRetryPolicy({});
    const caps = Array.from({ length: 8 }, (_, i) => backoffDelayMs(policy, i + 1, () => 1));
    expect(caps).toEqual([100, 200, 400, 800, 1600, 2000, 2000, 2000]);
    expect(caps.slice(0, 6).reduce((a, b) => a + b, 0)).toBeLessThan(policy.maxElapsedMs);
    // no overflow to NaN far into an unbounded streak, even with a zero initial backoff
    expect(backoffDelayMs(policy, 5000, () => 1)).toBe(2000);
    expect(backoffDelayMs(resolveRetryPolicy({ initialBackoffMs: 0 }), 5000, () => 1)).toBe(0);
  });

  it("retry: false is a single attempt", () => {
    expect(resolveRetryPolicy(false).maxAttempts).toBe(1);
  });

  it("draws the backoff uniformly below min(maxBackoff, initialBackoff * 2^(retry-1))", () => {
    const policy = resolveRetryPolicy({});
    expect(backoffDelayMs(policy, 1, () => 0.999)).toBe(99);
    expect(backoffDelayMs(policy, 3, () => 0.5)).toBe(200);
    expect(backoffDelayMs(policy, 10, () => 0.999)).toBe(1998);
    expect(backoffDelayMs(policy, 4, () => 0)).toBe(0);
  });
});

describe("which failures are retried", () => {
  it("retries UNAVAILABLE", () => {
    expect(isRetryable(new ConnectError("store down", Code.Unavailable))).toBe(true);
  });

  it("retries a connection reset whatever code the stack gave it", () => {
    for (const code of [Code.Aborted, Code.Canceled, Code.Internal, Code.Unknown])
      expect(isRetryable(reset(code))).toBe(true);
  });

  it("retries an HTTP/2 stream reset", () => {
    expect(isRetryable(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled))).toBe(
      true,
    );
  });

  it("retries a fetch that failed on the network (browser transports)", () => {
    expect(isRetryable(new ConnectError("Failed to fetch", Code.Unknown))).toBe(true);
  });

  it("retries a stream that ended before its output", () => {
    expect(isRetryable(new ConnectError("the Chat stream ended without an output", Code.DataLoss))).toBe(true);
  });

  it("does not retry a status the server answered, even ABORTED or INTERNAL", () => {
    for (const code of [Code.Aborted, Code.Internal, Code.InvalidArgument, Code.NotFound, Code.FailedPrecondition])
      expect(isRetryable(new ConnectError("the server said no", code))).toBe(false);
  });

  it("does not retry DEADLINE_EXCEEDED", () => {
    expect(isRetryable(new ConnectError("too slow", Code.DeadlineExceeded))).toBe(false);
  });

  it("does not retry once the caller's signal aborted", () => {
    expect(isRetryable(reset(Code.Canceled), AbortSignal.abort())).toBe(false);
  });
});
