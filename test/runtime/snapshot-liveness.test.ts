import { describe, expect, it } from "vitest";
import { DEFAULT_LIVENESS, effectiveStatus } from "../../src/runtime/snapshot-liveness.js";

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
