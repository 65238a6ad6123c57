import { v7 as uuidv7 } from "uuid";
import { AgentError } from "../src/errors/agent-error.js";
import type { SessionSnapshot } from "../src/types/snapshot.js";

/** A new snapshot ID: a UUID v7 (time-ordered, so IDs created later sort greater). */
export function newSnapshotId(): string {
  return uuidv7();
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * True for IDs every store can hold safely (they become file names): 1–200
 * characters of letters, digits, `.`, `_`, `-`, not starting with a dot or dash.
 */
export function isValidSnapshotId(snapshotId: string): boolean {
  return ID_PATTERN.test(snapshotId);
}

/** Throws INVALID_ARGUMENT for an ID that fails {@link isValidSnapshotId}. */
export function assertValidSnapshotId(snapshotId: string): void {
  if (!isValidSnapshotId(snapshotId)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `invalid snapshot ID ${JSON.stringify(snapshotId)}: use 1-200 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
}

/**
 * Applies the store's identity rules to a mutator's result: the row gets
 * `snapshotId`, keeps the existing row's `sessionId` (a new row must bring a
 * non-empty one), and must carry numeric timestamps and a status.
 * INVALID_ARGUMENT otherwise.
 */
export function bindIdentity<S>(
  result: SessionSnapshot<S>,
  snapshotId: string,
  existing: SessionSnapshot<S> | undefined,
): SessionSnapshot<S> {
  if (result === null || typeof result !== "object") {
    throw new AgentError("INVALID_ARGUMENT", "the snapshot mutator must return a snapshot object or null");
  }
  const sessionId = existing ? existing.sessionId : result.sessionId;
  if (typeof sessionId !== "string" || sessionId.length === 0) {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${snapshotId}: a new snapshot needs a non-empty sessionId`);
  }
  if (typeof result.createdAt !== "number" || typeof result.updatedAt !== "number") {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${snapshotId}: createdAt and updatedAt must be epoch-millisecond numbers`);
  }
  if (typeof result.status !== "string") {
    throw new AgentError("INVALID_ARGUMENT", `snapshot ${snapshotId}: status is required`);
  }
  return { ...result, snapshotId, sessionId };
}
