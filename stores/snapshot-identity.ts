import { uuidv7 } from "./uuid-v7.js";
import { AgentError } from "../src/errors/agent-error.js";

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
