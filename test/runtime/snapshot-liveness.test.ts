import { describe, expect, it } from "vitest";
import { DEFAULT_LIVENESS, effectiveStatus, takeoverDue } from "../../src/runtime/sessions/snapshot-liveness.js";

describe("effectiveStatus", () => {
  const ttl = DEFAULT_LIVENESS.heartbeatTtlMs;

  it("keeps a pending row pending up to exactly its heartbeat TTL, and expired after", () => {
    const row = { status: "pending" as const, updatedAt: 0, heartbeatAt: 1_000 };
    expect(effectiveStatus(row, DEFAULT_LIVENESS, 1_000 + ttl)).toBe("pending");
    expect(effectiveStatus(row, DEFAULT_LIVENESS, 1_000 + ttl + 1)).toBe("expired");
  });

  it("measures from the last update when the row has no heartbeat", () => {
    const row = { status: "pending" as const, updatedAt: 5_000 };
    expect(effectiveStatus(row, DEFAULT_LIVENESS, 5_000 + ttl)).toBe("pending");
    expect(effectiveStatus(row, DEFAULT_LIVENESS, 5_000 + ttl + 1)).toBe("expired");
  });

  it("reports every other status as stored, however old", () => {
    for (const status of ["completed", "aborted", "failed"] as const) {
      expect(effectiveStatus({ status, updatedAt: 0 }, DEFAULT_LIVENESS, Number.MAX_SAFE_INTEGER)).toBe(status);
    }
  });
});

describe("rows that record their remaining work (takeover)", () => {
  const ttl = DEFAULT_LIVENESS.heartbeatTtlMs;
  const row = { status: "pending" as const, updatedAt: 0, heartbeatAt: 1_000, work: {} };

  it("read pending through the takeover window (one more TTL), and expired after", () => {
    expect(effectiveStatus(row, DEFAULT_LIVENESS, 1_000 + 2 * ttl)).toBe("pending");
    expect(effectiveStatus(row, DEFAULT_LIVENESS, 1_000 + 2 * ttl + 1)).toBe("expired");
  });

  it("are due for takeover only once the heartbeat TTL has passed, and until the window closes", () => {
    expect(takeoverDue(row, DEFAULT_LIVENESS, 1_000 + ttl)).toBe(false);
    expect(takeoverDue(row, DEFAULT_LIVENESS, 1_000 + ttl + 1)).toBe(true);
    expect(takeoverDue(row, DEFAULT_LIVENESS, 1_000 + 2 * ttl)).toBe(true);
    expect(takeoverDue(row, DEFAULT_LIVENESS, 1_000 + 2 * ttl + 1)).toBe(false);
  });

  it("measure from the last update when the row has no heartbeat", () => {
    const silent = { status: "pending" as const, updatedAt: 5_000, work: {} };
    expect(takeoverDue(silent, DEFAULT_LIVENESS, 5_000 + ttl)).toBe(false);
    expect(takeoverDue(silent, DEFAULT_LIVENESS, 5_000 + ttl + 1)).toBe(true);
  });

  it("are never due when the row records no work, or is no longer pending", () => {
    const { work: _work, ...withoutWork } = row;
    expect(takeoverDue(withoutWork, DEFAULT_LIVENESS, 1_000 + ttl + 1)).toBe(false);
    for (const status of ["completed", "aborted", "failed"] as const) {
      expect(takeoverDue({ ...row, status }, DEFAULT_LIVENESS, 1_000 + ttl + 1)).toBe(false);
    }
  });
});
