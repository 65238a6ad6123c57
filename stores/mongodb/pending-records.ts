import { pendingRecordCommitted, type HeadTokens } from "./commit-outcome.js";
import { FENCED_TOKENS, LIVE_HEAD, pendingCommitPath, type HeadDocument } from "./head-document.js";
import type { RecordDocument } from "./record-document.js";
import type { StoreCollections } from "./store-collections.js";

// The sweep's step for records still marked pending: settle the committed, delete only the provably uncommitted.

/**
 * Settles the pending records (see `RecordDocument.pending`) of the sessions
 * in `heads` (which do have a head), one query on the sessionId index:
 *
 * - a record whose commit landed (see pendingRecordCommitted) has its mark
 *   cleared, whatever its age;
 * - a record older than the grace period (`old`) is deleted with its
 *   checkpoint chunks only once it is proven never to have committed: one
 *   conditional update adds its token to the head's `fencedTokens` where the
 *   head neither holds the token nor points at the record (so its commit's
 *   head write can never land afterwards), and no record of the session
 *   names it as parent. A head being deleted, or a record without a token,
 *   is left alone (the deletion removes it);
 * - `pendingCommits` entries of the head whose record is not pending any
 *   more (settled, or deleted with its session) are removed.
 */
export async function settlePendingRecords(
  c: StoreCollections,
  heads: ReadonlyMap<string, HeadTokens & Pick<HeadDocument, "deletingAt">>,
  cutoff: Date,
): Promise<void> {
  if (heads.size === 0) return;
  const pending = await c.records
    .find(
      { sessionId: { $in: [...heads.keys()] }, pending: true },
      { projection: { _id: 1, sessionId: 1, commitToken: 1, checkpointChunks: 1, turnIndex: 1, storedAt: 1 } },
    )
    .toArray();
  const settle = (doc: RecordDocument) =>
    c.records.updateOne({ _id: doc._id, commitToken: doc.commitToken }, { $unset: { pending: "" } });
  for (const doc of pending) {
    const head = heads.get(doc.sessionId) ?? null;
    if (pendingRecordCommitted(doc, head)) {
      await settle(doc);
      continue;
    }
    const young = doc.storedAt !== undefined && doc.storedAt.getTime() > cutoff.getTime();
    if (young || head?.deletingAt !== undefined || doc.commitToken === undefined) continue;
    const verdict = await neverCommitted(c, doc);
    if (verdict === "committed") await settle(doc);
    if (verdict !== "never") continue;
    await c.records.deleteOne({ _id: doc._id, pending: true, commitToken: doc.commitToken });
    if (doc.checkpointChunks) await c.chunks.deleteMany({ set: doc.checkpointChunks.set });
  }
  for (const [sessionId, head] of heads) {
    const stale = Object.keys(head?.pendingCommits ?? {}).filter((token) => !pendingTokenIn(pending, token));
    if (stale.length === 0) continue;
    await c.heads.updateOne(
      { _id: sessionId },
      { $unset: Object.fromEntries(stale.map((token) => [pendingCommitPath(token), ""] as const)) },
    );
  }
}

/** True when one of `pending` (the session's pending records as read) carries `token`. */
function pendingTokenIn(pending: readonly Pick<RecordDocument, "commitToken">[], token: string): boolean {
  return pending.some((doc) => doc.commitToken === token);
}

/**
 * Whether the pending record `doc` provably never committed: its token is
 * fenced on the head (where the head neither holds the token nor points at
 * the record; after that no head write carrying it can land) and no record
 * of the session names it as parent ("never"). A record that is some
 * record's parent was read as committed when that turn was built on it
 * ("committed": its proof predates `pendingCommits`); "maybe" when the head
 * holds its token after all (keep it).
 */
async function neverCommitted(
  c: StoreCollections,
  doc: Pick<RecordDocument, "_id" | "sessionId" | "commitToken" | "turnIndex">,
): Promise<"never" | "committed" | "maybe"> {
  const token = doc.commitToken!;
  const fenced = await c.heads.updateOne(
    {
      _id: doc.sessionId,
      ...LIVE_HEAD,
      headSnapshotId: { $ne: doc._id },
      recentTokens: { $ne: token },
      [pendingCommitPath(token)]: { $exists: false },
    },
    { $push: { fencedTokens: { $each: [token], $slice: -FENCED_TOKENS } } },
  );
  if (fenced.matchedCount !== 1) return "maybe";
  const child = await c.records.findOne(
    { sessionId: doc.sessionId, turnIndex: { $gt: doc.turnIndex }, parentId: doc._id },
    { projection: { _id: 1 } },
  );
  return child === null ? "never" : "committed";
}
