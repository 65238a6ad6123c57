import type { StoreCallContext } from "../snapshot-store.js";

/** Options of {@link FileSessionStore}. */
export interface FileSessionStoreOptions {
  /**
   * Per-call subdirectory (tenant isolation), e.g. `(ctx) => ctx.tenant ?? ""`.
   * May nest with `/`; `..`/`.` segments are rejected and other unsafe
   * characters percent-encoded, so a prefix never escapes the store directory.
   */
  pathPrefix?: (ctx: StoreCallContext) => string;
  /** Fallback poll interval for cross-process status changes and chunk appends (fs.watch is primary). Default 500 ms; <= 0 disables. */
  pollIntervalMs?: number;
  /** Make every commit and record update durable before it resolves (survives power loss). Default true. */
  fsync?: boolean;
  /**
   * With `fsync`: commits wait for a group-committed fsync of this process's
   * commit journal (`journal/`), shared by every session, instead of an
   * fdatasync of their own session log. Default true; false fdatasyncs each
   * session log (and the snapshot map) per commit.
   */
  journal?: boolean;
  /** A cross-process session or record lock older than this is considered abandoned. Default 30 s. */
  lockStaleMs?: number;
  /**
   * Removal of crash debris (see `sweepDebris`): once when the store opens,
   * then every `intervalMs` (default 60 s; <= 0: only at open) on an unref'd
   * timer. Temporary files older than `tmpMaxAgeMs` (default 60 s) and lock
   * files of dead processes go.
   */
  debrisSweep?: { intervalMs?: number; tmpMaxAgeMs?: number };
}
