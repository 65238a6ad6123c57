import type { SessionState } from "../../src/types/session-state.js";
import type { SnapshotRecord, StateDelta } from "../snapshot-store.js";
import { jsonBytes } from "./state-delta.js";

/**
 * When a record stores the whole state (a checkpoint) instead of a delta.
 * A checkpoint is written when the deltas since the last one (this turn's
 * included) reach `minDeltaBytes` AND `ratio` × the last checkpoint's size, or
 * when `maxDepth` deltas have accumulated. The ratio rule keeps the bytes
 * written per turn flat however long the conversation grows: over a long
 * conversation the checkpoints add at most `1 + 1/ratio` bytes per delta byte
 * (≤ 1.25 with the default), so the amortized bytes per turn stay within
 * 2.25× of the turn's own delta. Reading a snapshot costs its checkpoint plus
 * the deltas since, at most `1 + ratio` times its state size (exactly its size
 * when turns only append).
 */
export interface CheckpointPolicy {
  /** Deltas since the last checkpoint must reach this many bytes first. Default 1 MiB. */
  minDeltaBytes: number;
  /** …and this multiple of the last checkpoint's size. Default 4. */
  ratio: number;
  /** Write a checkpoint after this many deltas whatever their size (bounds a chain read). Default 4096. */
  maxDepth: number;
}

/** The default checkpoint policy (see {@link CheckpointPolicy}). */
export const DEFAULT_CHECKPOINT_POLICY: Readonly<CheckpointPolicy> = Object.freeze({
  minDeltaBytes: 1024 * 1024,
  ratio: 4,
  maxDepth: 4096,
});

/** The stored-state fields of a new record: a delta on `parent`, or a checkpoint when the policy says so. */
export type RecordStateFields<S> = Pick<
  SnapshotRecord<S>,
  "checkpoint" | "delta" | "depth" | "deltaBytes" | "checkpointBytes" | "checkpointTurn"
>;

/**
 * Chooses between storing `delta` (on top of `parent`) and a checkpoint of
 * `state` for a record at `turnIndex`. `parent` undefined (a new session)
 * always checkpoints. Computes the checkpoint's size only when one is written.
 */
export function recordStateFields<S>(
  parent: Pick<SnapshotRecord<S>, "depth" | "deltaBytes" | "checkpointBytes" | "checkpointTurn"> | undefined,
  delta: StateDelta<S>,
  state: () => SessionState<S>,
  turnIndex: number,
  policy: CheckpointPolicy = DEFAULT_CHECKPOINT_POLICY,
): RecordStateFields<S> {
  if (parent) {
    const bytes = jsonBytes(delta);
    const deltaBytes = parent.deltaBytes + bytes;
    const depth = parent.depth + 1;
    const due =
      depth >= policy.maxDepth ||
      (deltaBytes >= policy.minDeltaBytes && deltaBytes >= policy.ratio * parent.checkpointBytes);
    if (!due)
      return {
        delta,
        depth,
        deltaBytes,
        checkpointBytes: parent.checkpointBytes,
        checkpointTurn: parent.checkpointTurn,
      };
  }
  const checkpoint = state();
  return { checkpoint, depth: 0, deltaBytes: 0, checkpointBytes: jsonBytes(checkpoint), checkpointTurn: turnIndex };
}
