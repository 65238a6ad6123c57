import type { SessionSnapshot, SnapshotStatus } from "../types/snapshot.js";

/** How background work proves it is alive. */
export interface LivenessSettings {
  /** How often a detached invocation refreshes its pending row's heartbeat (ms). */
  heartbeatIntervalMs: number;
  /** A pending row whose heartbeat is older than this reads as `expired` (ms). */
  heartbeatTtlMs: number;
  /**
   * How long the streamed chunks of detached work are kept after its last
   * sign of life (its last heartbeat, or its end) for clients re-attaching
   * (ms, `--chunk-retention`).
   */
  chunkRetentionMs: number;
}

/** Defaults: heartbeat every 5 s, expired after 30 s of silence, chunks kept 1 h after the work ended. */
export const DEFAULT_LIVENESS: LivenessSettings = {
  heartbeatIntervalMs: 5_000,
  heartbeatTtlMs: 30_000,
  chunkRetentionMs: 3_600_000,
};

/**
 * The status a reader reports: a `pending` row whose heartbeat (or, without
 * one, its last update) is older than the TTL is `expired`. Computed on read,
 * never written back.
 */
export function effectiveStatus(
  snapshot: Pick<SessionSnapshot<unknown>, "status" | "heartbeatAt" | "updatedAt">,
  settings: LivenessSettings,
  now = Date.now(),
): SnapshotStatus {
  if (snapshot.status !== "pending") return snapshot.status;
  const lastSign = snapshot.heartbeatAt ?? snapshot.updatedAt;
  return now - lastSign > settings.heartbeatTtlMs ? "expired" : "pending";
}

/**
 * How often a reader following a pending row re-reads it to notice a stale
 * heartbeat (or a vanished row), which no status change announces: a quarter
 * of the heartbeat TTL, at least 50 ms.
 */
export function livenessRecheckMs(settings: LivenessSettings): number {
  return Math.max(50, Math.floor(settings.heartbeatTtlMs / 4));
}
