import { AgentError } from "../src/errors/agent-error.js";
import type { HeadCommit, SessionHead, SnapshotRecord } from "./snapshot-store.js";
import { assertValidSnapshotId } from "./snapshot-identity.js";

/**
 * Checks a commit before any store writes it: valid IDs, a record of the
 * head's session, numeric timestamps, `expectedVersion` a non-negative
 * integer. Throws INVALID_ARGUMENT naming the problem. Returns the head to
 * store (version = expectedVersion + 1).
 */
export function headToStore<S>(commit: HeadCommit<S>): SessionHead {
  const { head, record, expectedVersion } = commit;
  if (!Number.isInteger(expectedVersion) || expectedVersion < 0) {
    throw new AgentError("INVALID_ARGUMENT", `commit: expectedVersion must be an integer >= 0 (got ${expectedVersion})`);
  }
  if (typeof head.sessionId !== "string" || head.sessionId.length === 0) {
    throw new AgentError("INVALID_ARGUMENT", "commit: the head needs a non-empty sessionId");
  }
  if (typeof head.agent !== "string" || typeof head.owner !== "string") {
    throw new AgentError("INVALID_ARGUMENT", `session ${head.sessionId}: the head needs an agent name and an owner string`);
  }
  if (record) {
    assertValidSnapshotId(record.snapshotId);
    if (record.sessionId !== head.sessionId) {
      throw new AgentError("INVALID_ARGUMENT", `snapshot ${record.snapshotId} belongs to session ${record.sessionId}, not ${head.sessionId}`);
    }
    assertRecordShape(record);
  }
  return { ...head, version: expectedVersion + 1 };
}

/** Throws INVALID_ARGUMENT when a record lacks numeric timestamps or a status. */
export function assertRecordShape<S>(record: SnapshotRecord<S>): void {
  if (typeof record.createdAt !== "number" || typeof record.updatedAt !== "number") {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${record.snapshotId}: createdAt and updatedAt must be epoch-millisecond numbers`);
  }
  if (typeof record.status !== "string") {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${record.snapshotId}: status is required`);
  }
  if (record.checkpoint && record.delta) {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${record.snapshotId}: a record holds a checkpoint or a delta, not both`);
  }
}

/** A mutator's result with the existing record's identity and lineage kept (see RecordMutator). */
export function keepIdentity<S>(result: SnapshotRecord<S>, existing: SnapshotRecord<S>): SnapshotRecord<S> {
  if (result === null || typeof result !== "object") {
    throw new AgentError("INVALID_ARGUMENT", "the record mutator must return a record object or null");
  }
  const kept: SnapshotRecord<S> = {
    ...result,
    snapshotId: existing.snapshotId,
    sessionId: existing.sessionId,
    createdAt: existing.createdAt,
  };
  if (existing.parentId !== undefined) kept.parentId = existing.parentId;
  else delete kept.parentId;
  assertRecordShape(kept);
  return kept;
}
