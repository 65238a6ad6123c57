import { randomUUID } from "node:crypto";
import type { Collection } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { deepFreeze } from "../ledger/frozen-value.js";
import { keepIdentity } from "../record-identity.js";
import type { RecordMutator, SnapshotRecord } from "../snapshot-store.js";
import type { StatusObservation } from "../status-channel.js";
import type { CheckpointChunks } from "./checkpoint-chunks.js";
import { beforeDeadline, StalledStoreCall } from "./failover-retry.js";
import { conflictBackoff, guarded, isTransientMongoError } from "./mongo-errors.js";
import {
  changedFields,
  encodeRecord,
  holdsUpdateToken,
  nextVersion,
  UPDATE_TOKEN_SLOTS,
  type RecordDocument,
} from "./record-document.js";
import type { RecordReads } from "./record-reads.js";

/**
 * How long `updateRecord` keeps retrying transient failures (UNAVAILABLE:
 * no primary, network errors, step-down, write-concern timeout) before it
 * gives up. 30 s outlasts a replica-set election (up to ~12 s) plus the
 * driver's server selection, so the final write of a detached run survives
 * a failover instead of leaving its row pending (and later `expired`).
 */
export const DEFAULT_FAILOVER_WINDOW_MS = 30_000;

/** What one record update needs from the store. */
export interface RecordUpdateContext<S> {
  records: Collection<RecordDocument>;
  chunks: CheckpointChunks;
  reads: RecordReads<S>;
  /** Give up with ABORTED after this many version conflicts. */
  maxConflictRetries: number;
  /** Keep retrying transient failures until this much time has passed since the first attempt. */
  failoverWindowMs: number;
  /** True once the store is closed (stop retrying). */
  closed: () => boolean;
  /** Reports the status the store wrote (to local subscribers). */
  delivered: (snapshotId: string, observation: StatusObservation) => void;
}

const ignore = (): undefined => undefined;

/** Pause before the next attempt after a transient failure: 100 ms doubling to 2 s, ±50 % jitter. */
function failoverBackoff(attempt: number): Promise<void> {
  const ms = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Atomically rewrites a record: optimistic read → mutator → conditional
 * `$set` of the changed fields on the record's version, retried (with
 * backoff) on a version conflict, up to `maxConflictRetries` (then ABORTED).
 * A transient failure (UNAVAILABLE) is retried with backoff until
 * `failoverWindowMs` has passed since the first attempt. Each write sets
 * a token of its own in its slot of the record's `updateTokenRing`, so a write whose
 * acknowledgement was lost (write-concern timeout, failover, network error)
 * is recognised by a later read, however many writes came after it, and the
 * mutation is not applied twice; a read that does not see it yet (a
 * majority view behind the primary) cannot double-apply it either, since
 * every write is a compare-and-set on the version the primary holds. Resolves to the stored record, or null when
 * the record is missing or the mutator skipped the write.
 */
export async function updateRecordDocument<S>(
  ctx: RecordUpdateContext<S>,
  snapshotId: string,
  mutator: RecordMutator<S>,
): Promise<SnapshotRecord<S> | null> {
  const deadline = Date.now() + ctx.failoverWindowMs;
  const uncertain = new Set<string>();
  let conflicts = 0;
  for (let failures = 0; ;) {
    try {
      const outcome = await beforeDeadline(
        `updating snapshot ${snapshotId}`,
        attempt(ctx, snapshotId, mutator, uncertain),
        deadline,
      );
      if (outcome !== "conflict") return outcome;
      if (++conflicts > ctx.maxConflictRetries) {
        throw new AgentError(
          "ABORTED",
          `snapshot ${snapshotId}: gave up after ${ctx.maxConflictRetries} concurrent-write conflicts; retry the request`,
        );
      }
      await conflictBackoff(conflicts - 1);
    } catch (err) {
      const transient = (err instanceof AgentError && err.status === "UNAVAILABLE") || isTransientMongoError(err);
      if (!transient || err instanceof StalledStoreCall || ctx.closed() || Date.now() >= deadline) throw err;
      await failoverBackoff(failures++);
    }
  }
}

/** One read-modify-write: the stored record, null (missing / skipped), or "conflict" (someone else wrote first). */
async function attempt<S>(
  ctx: RecordUpdateContext<S>,
  snapshotId: string,
  mutator: RecordMutator<S>,
  uncertain: Set<string>,
): Promise<SnapshotRecord<S> | null | "conflict"> {
  const loaded = await guarded(`reading snapshot ${snapshotId}`, () => ctx.reads.load(snapshotId));
  if (!loaded) return null;
  const before = loaded.doc;
  if (holdsUpdateToken(before, uncertain)) {
    // An earlier attempt's write was applied; only its acknowledgement was lost.
    ctx.delivered(snapshotId, { status: before.status, version: before.version });
    return loaded.record;
  }
  const result = mutator(deepFreeze(loaded.record));
  if (result === null) return null;
  const next = keepIdentity(result, loaded.record);
  const reuse =
    before.checkpointChunks && loaded.chunkedJson !== undefined
      ? { ref: before.checkpointChunks, json: loaded.chunkedJson }
      : undefined;
  const encoded = encodeRecord(next, nextVersion(before.version), true, reuse);
  const written = await guarded(`updating snapshot ${snapshotId}`, async () => {
    if (encoded.chunks) await ctx.chunks.write(encoded.chunks);
    const token = randomUUID();
    uncertain.add(token);
    const update = changedFields(before, encoded.doc);
    const count = before.updateCount ?? 0;
    update.$set[`updateTokenRing.${count % UPDATE_TOKEN_SLOTS}`] = token;
    update.$set.updateCount = count + 1;
    if (before.updateTokens) update.$unset = { ...update.$unset, updateTokens: "" };
    const res = await ctx.records.updateOne({ _id: snapshotId, version: before.version }, update);
    uncertain.delete(token); // answered: applied or definitely not
    const applied = res.matchedCount === 1;
    // Drop the chunks nobody references any more: the replaced checkpoint's, or ours when we lost the race.
    if (applied) {
      const old = before.checkpointChunks;
      if (old && old.set !== encoded.doc.checkpointChunks?.set) await ctx.chunks.remove(old.set).catch(ignore);
    } else if (encoded.chunks) {
      await ctx.chunks.remove(encoded.chunks.ref.set).catch(ignore);
    }
    return applied;
  });
  if (!written) return "conflict";
  ctx.delivered(snapshotId, { status: encoded.doc.status, version: encoded.doc.version });
  return next;
}
