import type { SessionLifecycle } from "./session-lifecycle.js";
import { startPeriodicTask } from "../background/periodic-task.js";

/** What the sweeper reports after each pass that removed something or failed. */
export interface SweepReport {
  /** Expired sessions deleted. */
  removed?: number;
  /** Chunk logs of detached work removed after their retention. */
  removedChunkLogs?: number;
  error?: unknown;
}

/** The interval between sweeps for a server-wide time-to-live: half of it, between 0.5 s and 60 s (60 s without one). */
export function sweepIntervalFor(sessionTtlMs: number | undefined): number {
  if (sessionTtlMs === undefined) return 60_000;
  return Math.min(60_000, Math.max(500, Math.floor(sessionTtlMs / 2)));
}

/**
 * Deletes expired sessions (and the chunk logs of detached work past their
 * retention) now and then every `intervalMs` (passes never
 * overlap; timers do not keep the process alive). Reads already answer
 * NOT_FOUND for an expired session; sweeping reclaims its storage. Returns a
 * stop function that waits for a running pass.
 */
export function startSessionSweeper(
  lifecycle: SessionLifecycle,
  intervalMs: number,
  report: (outcome: SweepReport) => void,
): () => Promise<void> {
  return startPeriodicTask(
    async () => {
      const removed = await lifecycle.sweepExpired();
      const removedChunkLogs = await lifecycle.sweepChunks();
      if (removed > 0 || removedChunkLogs > 0) report({ removed, removedChunkLogs });
    },
    intervalMs,
    (error) => report({ error }),
  );
}
