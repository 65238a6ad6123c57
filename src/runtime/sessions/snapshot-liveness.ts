import type { SessionSnapshot, SnapshotStatus } from "../../types/snapshot.js";

/** How background work proves it is alive. */
export interface LivenessSettings {
  /** How often a detached invocation refreshes its pending row's heartbeat (ms). */
  heartbeatIntervalMs: number;
  /**
   * A pending row whose heartbeat is older than this is presumed dead (ms):
   * its work is taken over, and a row that records no remaining work reads
   * `expired`; one that does reads `expired` after one more TTL.
   */
  heartbeatTtlMs: number;
  /**
   * How long the streamed chunks of detached work are kept after its last
   * sign of life (its last heartbeat, or its end) for clients re-attaching
   * (ms, `--chunk-retention`).
   */
  chunkRetentionMs: number;
}

/** Defaults: heartbeat every 5 s; after 30 s of silence the work is taken over, and a row nobody took over reads expired after 60 s; chunks kept 1 h after the work ended. */
export const DEFAULT_LIVENESS: LivenessSettings = {
  heartbeatIntervalMs: 5_000,
  heartbeatTtlMs: 30_000,
  chunkRetentionMs: 3_600_000,
};

/** What liveness is judged on: a row's status, its last signs of life, and whether it records takeover-able work. */
export type LivenessFields = Pick<SessionSnapshot<unknown>, "status" | "heartbeatAt" | "updatedAt"> & {
  work?: unknown;
};

/**
 * The status a reader reports: a `pending` row whose heartbeat (or, without
 * one, its last update) is older than the TTL is `expired`. A row that
 * records its remaining work (see {@link takeoverDue}) gets one more TTL, the
 * takeover window, in which another instance may take the work over; it
 * reads `pending` until that window has passed. Computed on read, never
 * written back.
 */
export function effectiveStatus(
  snapshot: LivenessFields,
  settings: LivenessSettings,
  now = Date.now(),
): SnapshotStatus {
  if (snapshot.status !== "pending") return snapshot.status;
  const ttl = snapshot.work !== undefined ? 2 * settings.heartbeatTtlMs : settings.heartbeatTtlMs;
  return silenceOf(snapshot, now) > ttl ? "expired" : "pending";
}

/**
 * True when a pending row's worker is presumed dead and its work may be
 * taken over: the row records its remaining work, its heartbeat is older
 * than the TTL, and the takeover window (one more TTL) is still open.
 */
export function takeoverDue(snapshot: LivenessFields, settings: LivenessSettings, now = Date.now()): boolean {
  if (snapshot.status !== "pending" || snapshot.work === undefined) return false;
  const silence = silenceOf(snapshot, now);
  return silence > settings.heartbeatTtlMs && silence <= 2 * settings.heartbeatTtlMs;
}

function silenceOf(snapshot: LivenessFields, now: number): number {
  return now - (snapshot.heartbeatAt ?? snapshot.updatedAt);
}

/**
 * How often a stale heartbeat, which no status change announces, is looked
 * for: by a reader following a pending row (re-reading it, also to notice a
 * vanished row) and by the takeover poller. A quarter of the heartbeat TTL,
 * at least 50 ms.
 */
export function livenessRecheckMs(settings: LivenessSettings): number {
  return Math.max(50, Math.floor(settings.heartbeatTtlMs / 4));
}
