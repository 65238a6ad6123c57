import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { SessionSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { durationFromMs, durationToMs, sessionFromWire, sessionToWire } from "../../src/protocol/session-wire.js";
import type { SessionInfo } from "../../src/types/session-info.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

function duration(seconds: bigint, nanos: number) {
  return create(DurationSchema, { seconds, nanos });
}

describe("durationToMs", () => {
  it("adds whole milliseconds of the nanos to the seconds", () => {
    expect(durationToMs(duration(2n, 345_678_999), "ttl")).toBe(2345);
  });

  it("reads a zero duration as 0", () => {
    expect(durationToMs(duration(0n, 0), "ttl")).toBe(0);
  });

  it("accepts whole seconds without nanos", () => {
    expect(durationToMs(duration(90n, 0), "ttl")).toBe(90_000);
  });

  it("refuses negative seconds with INVALID_ARGUMENT naming the field", () => {
    const err = expectThrowsAgentError(() => durationToMs(duration(-1n, 0), "init.ttl"), "INVALID_ARGUMENT");
    expect(err.message).toBe("init.ttl must not be negative");
  });

  it("refuses negative nanos even when the total stays positive", () => {
    const err = expectThrowsAgentError(() => durationToMs(duration(5n, -1), "ttl"), "INVALID_ARGUMENT");
    expect(err.message).toBe("ttl must not be negative");
  });
});

describe("durationFromMs", () => {
  it("splits milliseconds into seconds and nanos", () => {
    const wire = durationFromMs(61_250);
    expect(wire.seconds).toBe(61n);
    expect(wire.nanos).toBe(250_000_000);
  });

  it("round-trips through durationToMs", () => {
    expect(durationToMs(durationFromMs(86_400_001), "ttl")).toBe(86_400_001);
  });
});

describe("session wire", () => {
  const session: SessionInfo = {
    sessionId: "sess-1",
    agent: "tasks",
    labels: { team: "a", env: "prod" },
    turnCount: 3,
    headSnapshotId: "snap-3",
    headStatus: "failed",
    createdAt: 1_700_000_000_123,
    updatedAt: 1_700_000_000_456,
    expiresAt: 1_700_000_900_789,
    ttlMs: 900_333,
  };

  it("carries expiry and TTL as Timestamp and Duration", () => {
    const wire = sessionToWire(session);
    expect(wire.headStatus).toBe(SnapshotStatus.FAILED);
    expect(wire.expiresAt?.seconds).toBe(1_700_000_900n);
    expect(wire.expiresAt?.nanos).toBe(789_000_000);
    expect(wire.ttl?.seconds).toBe(900n);
    expect(wire.ttl?.nanos).toBe(333_000_000);
  });

  it("round-trips every field through binary", () => {
    const wire = fromBinary(SessionSchema, toBinary(SessionSchema, sessionToWire(session)));
    expect(sessionFromWire(wire)).toStrictEqual(session);
  });

  it("leaves expiry and TTL unset when the session has none, and reads them back as absent", () => {
    const { expiresAt: _e, ttlMs: _t, ...withoutExpiry } = session;
    const wire = sessionToWire(withoutExpiry);
    expect(wire.expiresAt).toBeUndefined();
    expect(wire.ttl).toBeUndefined();
    expect(sessionFromWire(wire)).toStrictEqual(withoutExpiry);
  });

  it("reads a session with unset timestamps and status as epoch 0 and completed", () => {
    expect(sessionFromWire(create(SessionSchema, { sessionId: "s", agent: "a" }))).toStrictEqual({
      sessionId: "s",
      agent: "a",
      labels: {},
      turnCount: 0,
      headSnapshotId: "",
      headStatus: "completed",
      createdAt: 0,
      updatedAt: 0,
    });
  });

  it("refuses a negative TTL from a peer with INVALID_ARGUMENT", () => {
    const wire = sessionToWire(session);
    wire.ttl = duration(-5n, 0);
    const err = expectThrowsAgentError(() => sessionFromWire(wire), "INVALID_ARGUMENT");
    expect(err.message).toBe("ttl must not be negative");
  });
});
