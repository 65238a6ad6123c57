import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotRecord } from "../snapshot-store.js";

/**
 * The record as JSON. A record too large for one JavaScript string fails with
 * RESOURCE_EXHAUSTED before anything is written.
 */
export function recordJson<S>(record: SnapshotRecord<S>): string {
  try {
    return JSON.stringify(record);
  } catch (err) {
    if (err instanceof RangeError) {
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `snapshot ${record.snapshotId} is too large to store as one file (${err.message})`,
        { cause: err },
      );
    }
    throw err;
  }
}
