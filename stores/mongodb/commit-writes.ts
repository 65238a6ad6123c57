import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionHead } from "../snapshot-store.js";
import type { CheckpointChunks } from "./checkpoint-chunks.js";
import { headWriteOutcome, recordInsertLanded, unknownOutcome, type OutcomeProbe } from "./commit-outcome.js";
import { writeHead } from "./head-document.js";
import type { HeadWriteCache } from "./head-write-cache.js";
import { isDuplicateKey, isTransientMongoError, isUnsentError } from "./mongo-errors.js";
import type { EncodedRecord } from "./record-document.js";
import type { StoreCollections } from "./store-collections.js";

// The two writes of a MongoSessionStore commit, each of which answers only
// once its outcome is known (see commit-outcome.ts).

const ignore = (): undefined => undefined;

/**
 * The head compare-and-set; true when it landed, false on a version conflict
 * (it did not land and never will). `retried`: an earlier attempt of the same
 * commit (same token) may have landed with its outcome unknown, so a
 * compare-and-set that finds another version learns the outcome (see
 * headWriteOutcome) before answering "conflict". After an error of unknown
 * outcome (any transient error but one raised before the command was sent,
 * see isUnsentError), and after a duplicate key on creation (which a driver
 * retry of a landed insert also gets), it asks the server whether the head
 * holds `token`: the original error is thrown when it did not land (the
 * caller may repeat the write), UNAVAILABLE with `details.outcome =
 * "unknown"` when that cannot be learnt in time, never "conflict".
 * `recordId`: the record the head write commits (its settled mark also
 * proves that the write landed); `settled`, `cache`: see HeadWriteMarks.
 */
export async function moveHead(
  c: StoreCollections,
  head: SessionHead,
  expectedVersion: number,
  token: string,
  probe: OutcomeProbe,
  retried = false,
  marks: { recordId?: string; settled?: readonly string[]; cache?: HeadWriteCache } = {},
): Promise<boolean> {
  const outcome = (fence: boolean) => headWriteOutcome(c, head.sessionId, token, probe, marks.recordId, fence);
  const writeMarks = {
    commitsRecord: marks.recordId !== undefined,
    settled: marks.settled ?? [],
    ...(marks.cache ? { cache: marks.cache } : {}),
  };
  try {
    if (await writeHead(c.heads, head, expectedVersion, token, c.ttlGraceMs, writeMarks)) return true;
    if (expectedVersion !== 0 && !retried) return false;
  } catch (err) {
    if (!isTransientMongoError(err) || isUnsentError(err)) throw err;
    // Not fenced: the caller repeats this write (same token) next, which is harmless if this one lands late.
    const known = await outcome(false);
    if (known === "landed") return true;
    if (known === "unknown") throw unknownOutcome(head.sessionId, err);
    throw err;
  }
  const known = await outcome(true);
  if (known === "unknown") throw unknownOutcome(head.sessionId, undefined);
  return known === "landed";
}

/**
 * Inserts a commit's record (chunks first for a big checkpoint), marked with
 * its commit token. After an error of unknown outcome, or a duplicate key
 * (which a driver retry of an insert that landed also gets), it asks the
 * server whether the record with this token is stored, and carries on when
 * it is (so a retry of the same commit, same token, carries on too). Otherwise removes the chunks it wrote and throws: ALREADY_EXISTS
 * for an ID in use, the original error else.
 */
export async function insertRecord(
  encoded: EncodedRecord,
  c: StoreCollections,
  chunks: CheckpointChunks,
  probe: OutcomeProbe,
): Promise<void> {
  if (encoded.chunks) await chunks.write(encoded.chunks);
  const id = encoded.doc._id;
  const token = encoded.doc.commitToken!;
  try {
    await c.records.insertOne(encoded.doc);
  } catch (err) {
    // A lost reply (or a driver retry of an insert that landed) is not a failure of this commit.
    const unknown = (isTransientMongoError(err) && !isUnsentError(err)) || isDuplicateKey(err);
    if (unknown && (await recordInsertLanded(c.records, id, token, probe))) return;
    if (encoded.chunks) await chunks.remove(encoded.chunks.ref.set).catch(ignore);
    if (isDuplicateKey(err)) {
      throw new AgentError("ALREADY_EXISTS", `snapshot ${id} already exists; a commit needs a new snapshot ID`);
    }
    throw err;
  }
}
