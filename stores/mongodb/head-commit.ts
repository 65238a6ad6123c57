import { randomUUID } from "node:crypto";
import { AgentError } from "../../src/errors/agent-error.js";
import { headToStore } from "../record-identity.js";
import type { HeadCommit, SessionHead } from "../snapshot-store.js";
import type { CheckpointChunks } from "./checkpoint-chunks.js";
import { unknownOutcome, type OutcomeProbe } from "./commit-outcome.js";
import type { CommitSettlement } from "./commit-settlement.js";
import { insertRecord, moveHead } from "./commit-writes.js";
import { acrossFailover, type FailoverBudget, StalledStoreCall } from "./failover-retry.js";
import type { HeadWriteCache } from "./head-write-cache.js";
import { isUnsentError } from "./mongo-errors.js";
import { encodeRecord, nextVersion } from "./record-document.js";
import type { StatusObservation } from "../status-channel.js";
import type { StoreCollections } from "./store-collections.js";

/** What one commit writes with and tells: the store's collections, its commit bookkeeping and its status stream. */
export interface HeadCommitDeps {
  c: StoreCollections;
  chunks: CheckpointChunks;
  /** Clears the pending marks of landed commits. */
  settlement: CommitSettlement;
  /** The store's last head write per session: the next one sends only what changed. */
  headWrites: HeadWriteCache;
  /** Tells this instance's status subscribers of a record that just became visible. */
  delivered: (snapshotId: string, observation: StatusObservation) => void;
  /** How long the commit retries across a failover and probes an unknown outcome. */
  budget: FailoverBudget & OutcomeProbe;
}

const ignore = (): undefined => undefined;

/**
 * `MongoSessionStore.commit`: inserts the record (chunks first for a big
 * checkpoint) marked `pending`, then writes the head where its version is
 * `expectedVersion`, then clears the mark (without waiting for that third
 * write); on a conflict deletes what it inserted and resolves undefined. Each
 * attempt across a failover repeats the same writes with the same token, so a
 * write of an earlier attempt that landed is recognised, never applied twice.
 * A head write sent whose outcome was never learnt rejects UNAVAILABLE with
 * the unknown-outcome details (see commit-outcome.ts); a record that cannot
 * fit one document fails RESOURCE_EXHAUSTED before anything is written.
 */
export async function commitHead<S>(deps: HeadCommitDeps, commit: HeadCommit<S>): Promise<SessionHead | undefined> {
  const head = headToStore(commit);
  const { c, chunks, settlement, budget } = deps;
  const record = commit.record;
  // Unique to this call (the caller's token may repeat across its retries): what recentTokens and the record carry.
  const token = randomUUID();
  const encoded = record ? encodeRecord(record, nextVersion(undefined), false) : undefined;
  if (encoded) Object.assign(encoded.doc, { pending: true, commitToken: token });
  let attempts = 0;
  // True while a head write of an earlier attempt may have landed unseen (cleared once an attempt learns the outcome).
  let outcomeUnknown = false;
  // Each attempt repeats the same writes with the same token: one that landed is recognised, never applied twice.
  const committed = acrossFailover(`committing session ${head.sessionId}`, budget, async () => {
    const retried = attempts++ > 0;
    if (encoded) await insertRecord(encoded, c, chunks, budget);
    const settled = settlement.take(head.sessionId);
    let landed: boolean;
    try {
      landed = await moveHead(c, head, commit.expectedVersion, token, budget, retried, {
        ...(encoded ? { recordId: encoded.doc._id } : {}),
        settled,
        cache: deps.headWrites,
      });
      outcomeUnknown = false;
    } catch (err) {
      settlement.putBack(head.sessionId, settled);
      if (!isUnsentError(err)) outcomeUnknown = true;
      throw err;
    }
    if (!landed) {
      settlement.putBack(head.sessionId, settled);
      // The head write did not land and never will (a conflict, or a token fenced by headWriteOutcome).
      if (encoded) {
        await c.records.deleteOne({ _id: encoded.doc._id, version: encoded.doc.version }).catch(ignore);
        if (encoded.chunks) await chunks.remove(encoded.chunks.ref.set).catch(ignore);
      }
      return undefined;
    }
    if (encoded) {
      // Not awaited (no latency for the turn): until it lands the head's pendingCommits proves the record
      // committed to every reader, and a read or the sweep settles it if this never does.
      settlement.settle(head.sessionId, encoded.doc._id, token);
      deps.delivered(encoded.doc._id, { status: encoded.doc.status, version: encoded.doc.version });
    }
    return head;
  });
  return committed.catch((err: unknown) => {
    // A head write was sent and its outcome never learnt (or an attempt stalled, which may have sent it):
    // the record stays (pending, proven by nothing yet).
    if (err instanceof StalledStoreCall) throw unknownOutcome(head.sessionId, err);
    if (outcomeUnknown && err instanceof AgentError && err.status === "UNAVAILABLE" && !err.details?.outcome)
      throw unknownOutcome(head.sessionId, err);
    throw err;
  });
}
