import { AgentError } from "../../errors/agent-error.js";
import type { AgentErrorData } from "../../errors/agent-error.js";
import type { SessionState } from "../../types/session-state.js";
import type { FinishReason, SnapshotEdit, SnapshotStatus } from "../../types/snapshot.js";
import type { Usage } from "../../types/usage.js";
import {
  DEFAULT_CHECKPOINT_POLICY,
  recordStateFields,
  type CheckpointPolicy,
  type RecordStateFields,
} from "../../../stores/ledger/checkpoint-policy.js";
import { diffState } from "../../../stores/ledger/state-delta.js";
import type { SnapshotRecord, StateDelta } from "../../../stores/snapshot-store.js";

/** The chain bookkeeping of a committed record (what the next delta builds on). */
export type ChainPosition = Pick<SnapshotRecord, "depth" | "deltaBytes" | "checkpointBytes" | "checkpointTurn">;

/** A committed snapshot as the runtime keeps it: its ID, frozen state and chain position. */
export interface CommittedPoint<S> {
  snapshotId: string;
  createdAt: number;
  state: SessionState<S>;
  position: ChainPosition;
}

/** How records are built: checkpoint policy and the per-session size cap. */
export interface RecordSettings {
  checkpoints: CheckpointPolicy;
  /** A session whose stored state would exceed this many bytes fails the turn with RESOURCE_EXHAUSTED. */
  maxSessionBytes: number;
}

/** Default record settings: the default checkpoint policy and a 64 MiB session cap. */
export const DEFAULT_RECORD_SETTINGS: Readonly<RecordSettings> = Object.freeze({
  checkpoints: DEFAULT_CHECKPOINT_POLICY,
  maxSessionBytes: 64 * 1024 * 1024,
});

/** What a record says about its snapshot besides the state. */
export interface RecordMeta {
  snapshotId: string;
  sessionId: string;
  turnIndex: number;
  createdAt: number;
  status: SnapshotStatus;
  finishReason?: FinishReason;
  error?: AgentErrorData;
  heartbeatAt?: number;
  /** The tokens of the turn(s) the record captures. */
  usage?: Usage;
  /** The request ID of the turn's input, if it carried one (see `SnapshotRecord.requestId`). */
  requestId?: string;
  /** The input's fingerprint (see `inputFingerprint`), with `requestId`. */
  requestFingerprint?: string;
  /** The turn ran from an edited copy of the parent's state (see `SnapshotEdit`). */
  edit?: SnapshotEdit;
}

/**
 * The stored-state fields for `state` on top of `parent` (a delta, or a
 * checkpoint when due). Costs the size of what changed since `parent` (plus
 * one pass of pointer comparisons over the history). Throws
 * RESOURCE_EXHAUSTED, before anything is written, when the session would
 * exceed `settings.maxSessionBytes`.
 */
export function stateFieldsFor<S>(
  parent: CommittedPoint<S> | undefined,
  state: SessionState<S>,
  turnIndex: number,
  settings: RecordSettings,
  keptMessages?: number,
): RecordStateFields<S> {
  const delta = parent ? diffState(parent.state, state, keptMessages) : undefined;
  return recordFieldsFor(parent?.position, delta, () => state, turnIndex, settings, state.sessionId ?? "");
}

/**
 * The stored-state fields of a record whose change from `parent` (the
 * parent's chain position; undefined for a new session) is `delta`: the
 * delta, or `state()` as a checkpoint when due (only then is it called).
 * Throws RESOURCE_EXHAUSTED, before anything is written, when session
 * `sessionId` would exceed `settings.maxSessionBytes`.
 */
export function recordFieldsFor<S>(
  parent: ChainPosition | undefined,
  delta: StateDelta<S> | undefined,
  state: () => SessionState<S>,
  turnIndex: number,
  settings: RecordSettings,
  sessionId: string,
): RecordStateFields<S> {
  const fields = recordStateFields(
    parent,
    delta ?? { keepMessages: 0, appendMessages: [] },
    state,
    turnIndex,
    settings.checkpoints,
  );
  const bytes = fields.checkpointBytes + fields.deltaBytes;
  if (bytes > settings.maxSessionBytes) {
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `session "${sessionId}" would grow to ${bytes} bytes, over the limit of ${settings.maxSessionBytes} (--max-session-bytes); nothing was written. Start a new session or trim the history`,
      { details: { sessionBytes: bytes, maxSessionBytes: settings.maxSessionBytes } },
    );
  }
  return fields;
}

/** A record of `meta` holding the state fields, with `parent` as its lineage. */
export function buildRecord<S>(
  meta: RecordMeta,
  parent: CommittedPoint<S> | undefined,
  fields: RecordStateFields<S> | ChainPosition,
): SnapshotRecord<S> {
  // Assigned rather than spread from optional parts (a commit builds one every turn); same keys, same order.
  const record = { ...meta } as SnapshotRecord<S>;
  if (parent) record.parentId = parent.snapshotId;
  record.updatedAt = meta.createdAt;
  return Object.assign(record, fields);
}

/** Just the chain bookkeeping of a record's fields (never the state they carry). */
export function chainPosition(fields: ChainPosition): ChainPosition {
  return {
    depth: fields.depth,
    deltaBytes: fields.deltaBytes,
    checkpointBytes: fields.checkpointBytes,
    checkpointTurn: fields.checkpointTurn,
  };
}
