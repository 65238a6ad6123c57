import { AgentError } from "../src/errors/agent-error.js";
import { MAX_COMMIT_TOKEN_LENGTH, type HeadCommit, type SessionHead, type SnapshotRecord } from "./snapshot-store.js";
import { validateLabels } from "./session-labels.js";
import { assertValidSnapshotId } from "./snapshot-identity.js";

/**
 * Checks a commit before any store writes it: valid IDs, a record of the
 * head's session, numeric timestamps, `expectedVersion` a non-negative
 * integer, valid labels (`validateLabels`) and a positive-integer `ttlMs`.
 * Throws INVALID_ARGUMENT naming the problem. Returns the head to store
 * (version = expectedVersion + 1): labels copied, `expiresAt` computed as
 * `updatedAt + ttlMs` when `ttlMs` is set and dropped otherwise (a caller's
 * `expiresAt` is never stored as given), unset optional fields left out,
 * `commitToken` set to the commit's `token` (dropped without one: a head
 * never carries the token of an earlier write).
 */
export function headToStore<S>(commit: HeadCommit<S>): SessionHead {
  const { head, record, expectedVersion } = commit;
  if (!Number.isInteger(expectedVersion) || expectedVersion < 0) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `commit: expectedVersion must be an integer >= 0 (got ${expectedVersion})`,
    );
  }
  if (typeof head.sessionId !== "string" || head.sessionId.length === 0) {
    throw new AgentError("INVALID_ARGUMENT", "commit: the head needs a non-empty sessionId");
  }
  if (typeof head.agent !== "string" || typeof head.owner !== "string") {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `session ${head.sessionId}: the head needs an agent name and an owner string`,
    );
  }
  if (record) {
    assertValidSnapshotId(record.snapshotId);
    if (record.sessionId !== head.sessionId) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `snapshot ${record.snapshotId} belongs to session ${record.sessionId}, not ${head.sessionId}`,
      );
    }
    assertRecordShape(record);
  }
  const stored: SessionHead = { ...head, version: expectedVersion + 1 };
  delete stored.expiresAt;
  if (commit.token === undefined) delete stored.commitToken;
  else stored.commitToken = checkedToken(commit.token, head.sessionId);
  if (head.usage === undefined) delete stored.usage;
  if (head.labels === undefined) delete stored.labels;
  else stored.labels = validateLabels(head.labels);
  if (head.ttlMs === undefined) {
    delete stored.ttlMs;
  } else {
    if (!Number.isSafeInteger(head.ttlMs) || head.ttlMs <= 0) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `session ${head.sessionId}: ttlMs must be a positive integer of milliseconds (got ${String(head.ttlMs)})`,
      );
    }
    if (typeof head.updatedAt !== "number" || !Number.isFinite(head.updatedAt)) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `session ${head.sessionId}: updatedAt must be an epoch-millisecond number when ttlMs is set`,
      );
    }
    const expiresAt = head.updatedAt + head.ttlMs;
    if (!Number.isSafeInteger(expiresAt)) {
      throw new AgentError("INVALID_ARGUMENT", `session ${head.sessionId}: ttlMs ${head.ttlMs} is too large`);
    }
    stored.expiresAt = expiresAt;
  }
  return stored;
}

/** The commit token when it is a non-empty string of at most MAX_COMMIT_TOKEN_LENGTH characters; INVALID_ARGUMENT otherwise. */
function checkedToken(token: unknown, sessionId: string): string {
  if (typeof token !== "string" || token.length === 0 || token.length > MAX_COMMIT_TOKEN_LENGTH) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `session ${sessionId}: a commit token must be a non-empty string of at most ${MAX_COMMIT_TOKEN_LENGTH} characters`,
    );
  }
  return token;
}

/** Throws INVALID_ARGUMENT when a record lacks numeric timestamps or a status. */
export function assertRecordShape<S>(record: SnapshotRecord<S>): void {
  if (typeof record.createdAt !== "number" || typeof record.updatedAt !== "number") {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `snapshot ${record.snapshotId}: createdAt and updatedAt must be epoch-millisecond numbers`,
    );
  }
  if (typeof record.status !== "string") {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${record.snapshotId}: status is required`);
  }
  if (record.checkpoint && record.delta) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `snapshot ${record.snapshotId}: a record holds a checkpoint or a delta, not both`,
    );
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
