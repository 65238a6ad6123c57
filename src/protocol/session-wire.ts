import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs, type Duration } from "@bufbuild/protobuf/wkt";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { SessionSchema, type Session as WireSession } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { AgentError } from "../errors/agent-error.js";
import type { SessionInfo } from "../types/session-info.js";
import { snapshotStatusFromWire, snapshotStatusToWire } from "../codec/enum-wire.js";
import { usageFieldFromWire, usageFieldToWire } from "./usage-wire.js";

/** A `google.protobuf.Duration` in whole milliseconds; INVALID_ARGUMENT for a negative one. */
export function durationToMs(duration: Duration, field: string): number {
  const ms = Number(duration.seconds) * 1000 + Math.floor(duration.nanos / 1_000_000);
  if (ms < 0 || duration.nanos < 0) throw new AgentError("INVALID_ARGUMENT", `${field} must not be negative`);
  return ms;
}

/** Milliseconds as a `google.protobuf.Duration`. */
export function durationFromMs(ms: number): Duration {
  return create(DurationSchema, { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
}

/** A session head as `agentd.v1.Session`. */
export function sessionToWire(info: SessionInfo): WireSession {
  return create(SessionSchema, {
    sessionId: info.sessionId,
    agent: info.agent,
    labels: info.labels,
    turnCount: info.turnCount,
    headSnapshotId: info.headSnapshotId,
    headStatus: snapshotStatusToWire(info.headStatus),
    createdAt: timestampFromMs(info.createdAt),
    updatedAt: timestampFromMs(info.updatedAt),
    ...(info.expiresAt !== undefined ? { expiresAt: timestampFromMs(info.expiresAt) } : {}),
    ...(info.ttlMs !== undefined ? { ttl: durationFromMs(info.ttlMs) } : {}),
    ...usageFieldToWire(info.usage),
  });
}

/** An `agentd.v1.Session` as a session (timestamps and the TTL back to epoch ms / ms). */
export function sessionFromWire(session: WireSession): SessionInfo {
  return {
    sessionId: session.sessionId,
    agent: session.agent,
    labels: { ...session.labels },
    turnCount: session.turnCount,
    headSnapshotId: session.headSnapshotId,
    headStatus: snapshotStatusFromWire(session.headStatus) ?? "completed",
    createdAt: session.createdAt ? timestampMs(session.createdAt) : 0,
    updatedAt: session.updatedAt ? timestampMs(session.updatedAt) : 0,
    ...(session.expiresAt ? { expiresAt: timestampMs(session.expiresAt) } : {}),
    ...(session.ttl ? { ttlMs: durationToMs(session.ttl, "ttl") } : {}),
    ...usageFieldFromWire(session.usage),
  };
}
