import type { Collection } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { FENCED_TOKENS, holdsToken, LIVE_HEAD, pendingCommitPath, type HeadDocument } from "./head-document.js";
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
const TOKEN_FIELDS = { projection: { recentTokens: 1, pendingCommits: 1, headSnapshotId: 1, version: 1 } } as const;

/** Pause before the next probe: 50 ms doubling to 1 s, ±50 % jitter. */
function probeBackoff(attempt: number): Promise<void> {
  const ms = Math.min(1_000, 50 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random());
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The three outcomes of a write whose reply was lost: it landed, it provably never will, or that is not known. */
export type WriteOutcome = "landed" | "not-landed" | "unknown";

/**
 * The outcome of the head write carrying `token` after its reply was lost
 * (network error, write-concern error, failover) or after a retried attempt
 * found another version. `landed` when a majority read of the head holds the
 * token (`recentTokens` or `pendingCommits`), or when the commit's record
 * (`recordId`) is stored with this token and settled (only a landed commit's
 * record is settled). `not-landed` only when it is proven: one conditional
 * update adds the token to the head's `fencedTokens` where the head does not
 * hold it, so the write can never land afterwards (every head write filters
 * on the fence). Without `fence` (the caller repeats the same write next, so a
 * late landing is harmless), and for a session without a head (a creation),
 * `not-landed` means only that not even the primary's own (local) view holds
 * the token now. While the
 * primary holds the token unreplicated, and after transient read errors, it
 * tries again with backoff; at the deadline, or once no server answers
 * within serverSelectionTimeoutMS, the outcome is `unknown`.
 * Non-transient errors are thrown.
 */
export async function headWriteOutcome(
  c: { heads: Collection<HeadDocument>; records: Collection<RecordDocument> },
  sessionId: string,
  token: string,
  probe: OutcomeProbe,
  recordId?: string,
  fence = true,
): Promise<WriteOutcome> {
  for (let attempt = 0; ; attempt++) {
    try {
      const majority = await c.heads.findOne({ _id: sessionId }, TOKEN_FIELDS);
      if (holdsToken(majority, token)) return "landed";
      if (recordId !== undefined) {
        const record = await c.records.findOne({ _id: recordId }, { projection: { commitToken: 1, pending: 1 } });
        if (record?.commitToken === token && !record.pending) return "landed";
      }
      if (majority && fence) {
        const fenced = await c.heads.updateOne(
          { _id: sessionId, recentTokens: { $ne: token }, [pendingCommitPath(token)]: { $exists: false } },
          { $push: { fencedTokens: { $each: [token], $slice: -FENCED_TOKENS } } },
        );
        if (fenced.matchedCount === 1) return "not-landed";
      } else {
        const local = await c.heads.findOne({ _id: sessionId }, { ...TOKEN_FIELDS, readConcern: { level: "local" } });
        if (!holdsToken(local, token)) return "not-landed";
      }
    } catch (err) {
      if (!isTransientMongoError(err)) throw err;
      if (isUnsentError(err)) return "unknown"; // no server answered within serverSelectionTimeoutMS
    }
    if (probe.closed() || Date.now() >= probe.deadline) return "unknown";
    await probeBackoff(attempt);
  }
}

/**
 * The error a commit whose outcome stayed unknown rejects with: UNAVAILABLE
 * with `details.outcome = "unknown"`, so the caller re-reads the head (its
 * `commitToken`) before it treats the turn as failed. Nothing was deleted.
 */
export function unknownOutcome(sessionId: string, cause: unknown): AgentError {
  return new AgentError(
    "UNAVAILABLE",
    `committing session ${sessionId}: the server did not confirm whether the turn was stored; read the session's head (its commitToken) to learn whether it landed, or retry with the same request ID`,
    { details: { outcome: "unknown" }, cause },
  );
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
export type HeadTokens = Pick<HeadDocument, "recentTokens" | "pendingCommits" | "headSnapshotId"> | null;

/**
 * True when a record still marked `pending` belongs to a commit that landed:
 * the head points at it, or holds its commit token in `pendingCommits` (kept
 * until the record is settled: a proof that cannot slide away) or in the
 * `recentTokens` ring (records of older versions). False for a record of a
 * commit that failed, is still in flight, or whose session has no head.
 */
export function pendingRecordCommitted(doc: Pick<RecordDocument, "_id" | "commitToken">, head: HeadTokens): boolean {
  if (!head) return false;
  if (head.headSnapshotId === doc._id) return true;
  return doc.commitToken !== undefined && holdsToken(head, doc.commitToken);
}

/** The head fields {@link pendingRecordCommitted} needs, read from the primary (majority); null when there is no live head. */
export function readHeadTokens(heads: Collection<HeadDocument>, sessionId: string): Promise<HeadTokens> {
  return heads.findOne(
    { _id: sessionId, ...LIVE_HEAD },
    { projection: { recentTokens: 1, pendingCommits: 1, headSnapshotId: 1 } },
  );
}
