import type { Collection } from "mongodb";
import { LIVE_HEAD, type HeadDocument } from "./head-document.js";
import { isTransientMongoError, isUnsentError } from "./mongo-errors.js";
import type { RecordDocument } from "./record-document.js";

/** How long, and until when, a store keeps trying to learn the outcome of a write. */
export interface OutcomeProbe {
  /** Epoch ms after which the outcome counts as unknown. */
  deadline: number;
  /** True once the store is closed (stop trying). */
  closed: () => boolean;
}

/** The fields of a head document that tell which writes landed. */
const TOKEN_FIELDS = { projection: { recentTokens: 1, headSnapshotId: 1, version: 1 } } as const;

/** Pause before the next probe: 50 ms doubling to 1 s, ±50 % jitter. */
function probeBackoff(attempt: number): Promise<void> {
  const ms = Math.min(1_000, 50 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Whether the head write carrying `token` landed, after it failed with an
 * error of unknown outcome (lost reply, write-concern timeout, failover):
 * true when the head's `recentTokens` hold the token as a majority read from
 * the primary sees it (read-your-writes: that read sees every write a
 * majority acknowledged), false when not even the primary's own (local) view
 * holds it, so the write was never applied there. While only the primary's
 * local view holds it (applied, not yet replicated to a majority), and
 * after transient read errors (a step-down, a network error), it tries again
 * with backoff; at the deadline, or once a read finds no server to send to
 * within the client's serverSelectionTimeoutMS (the store is down: the
 * caller should not wait out the whole window), the outcome is unknown
 * (undefined). Non-transient read errors are thrown.
 */
export async function headWriteLanded(
  heads: Collection<HeadDocument>,
  sessionId: string,
  token: string,
  probe: OutcomeProbe,
): Promise<boolean | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      const majority = await heads.findOne({ _id: sessionId }, TOKEN_FIELDS);
      if (majority?.recentTokens?.includes(token)) return true;
      const local = await heads.findOne({ _id: sessionId }, { ...TOKEN_FIELDS, readConcern: { level: "local" } });
      if (!local?.recentTokens?.includes(token)) return false;
    } catch (err) {
      if (!isTransientMongoError(err)) throw err;
      if (isUnsentError(err)) return undefined; // no server answered within serverSelectionTimeoutMS
    }
    if (probe.closed() || Date.now() >= probe.deadline) return undefined;
    await probeBackoff(attempt);
  }
}

/**
 * Whether a record insert carrying `token` landed after an error of unknown
 * outcome: true when the record is stored with that commit token (read from
 * the primary, majority, then local as {@link headWriteLanded} does), false
 * when it is not, undefined when that cannot be learnt before the deadline.
 */
export async function recordInsertLanded(
  records: Collection<RecordDocument>,
  snapshotId: string,
  token: string,
  probe: OutcomeProbe,
): Promise<boolean | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      const fields = { projection: { commitToken: 1 } } as const;
      if ((await records.findOne({ _id: snapshotId }, fields))?.commitToken === token) return true;
      const local = await records.findOne({ _id: snapshotId }, { ...fields, readConcern: { level: "local" } });
      if (local?.commitToken !== token) return false;
    } catch (err) {
      if (!isTransientMongoError(err)) throw err;
      if (isUnsentError(err)) return undefined; // no server answered within serverSelectionTimeoutMS
    }
    if (probe.closed() || Date.now() >= probe.deadline) return undefined;
    await probeBackoff(attempt);
  }
}

/** What a reader knows of a session's head when it decides whether a pending record is visible. */
export type HeadTokens = Pick<HeadDocument, "recentTokens" | "headSnapshotId"> | null;

/**
 * True when a record still marked `pending` belongs to a commit that landed:
 * its commit token is among the head's recent write tokens, or the head
 * points at it. False for a record of a commit that failed, is still in
 * flight, or whose session has no head.
 */
export function pendingRecordCommitted(doc: Pick<RecordDocument, "_id" | "commitToken">, head: HeadTokens): boolean {
  if (!head) return false;
  if (head.headSnapshotId === doc._id) return true;
  return doc.commitToken !== undefined && (head.recentTokens ?? []).includes(doc.commitToken);
}

/** The head fields {@link pendingRecordCommitted} needs, read from the primary (majority); null when there is no live head. */
export function readHeadTokens(heads: Collection<HeadDocument>, sessionId: string): Promise<HeadTokens> {
  return heads.findOne({ _id: sessionId, ...LIVE_HEAD }, { projection: { recentTokens: 1, headSnapshotId: 1 } });
}
