import type { Collection, Document, Filter } from "mongodb";
import { checkSessionQuery, encodeHeadPageToken } from "../session-query.js";
import type { ExpireHook, HeadPage, SessionHead, SessionQuery } from "../snapshot-store.js";
import type { ChunkDocument } from "./checkpoint-chunks.js";
import {
  DELETING_VERSION,
  fromHeadDocument,
  labelPair,
  LIVE_HEAD,
  WITHOUT_TOKENS,
  type HeadDocument,
} from "./head-document.js";
import { isDuplicateKey } from "./mongo-errors.js";
import type { RecordDocument } from "./record-document.js";
import type { StoreCollections } from "./store-collections.js";
import { loadOrphanScanPosition, saveOrphanScanPosition } from "./orphan-scan-position.js";
import { settlePendingRecords } from "./pending-records.js";

/**
 * How long a deletion marker may stand before a sweep (or MongoDB's TTL
 * monitor) treats the deletion as stalled (its deleter died) and finishes or
 * drops it: the marker's `expireAt` is the deletion time plus this.
 */
export const STALLED_DELETION_MS = 10 * 60_000;

/** Default of `orphanGraceMs`: records and chunks younger than this are never treated as orphans. */
export const DEFAULT_ORPHAN_GRACE_MS = 10 * 60_000;

/** Default of `orphanScanBatch`: index entries of each collection one sweep examines for orphans. */
export const DEFAULT_ORPHAN_SCAN_BATCH = 1000;

/** Sessions a sweep deletes at the same time. */
const SWEEP_CONCURRENCY = 8;

/** Expired heads one sweep query fetches. */
const SWEEP_BATCH = 500;

/**
 * One page of the owner's heads, newest updatedAt first (ties: greater `_id`),
 * from the `{owner: 1, updatedAt: -1, _id: -1}` index: equality on owner,
 * optional agent, every label pair (`labelPairs: {$all: …}`), updatedAt after
 * `updatedAfter`, not expired at `now` and not being deleted; a page token
 * (`h.` + base64url `[updatedAt, sessionId]`, see session-query.ts) resumes
 * strictly after its key, so heads created or moved to the front while paging
 * never shift later pages. Reads `pageSize + 1` documents to know whether
 * another page exists.
 */
export async function listHeadsPage(heads: Collection<HeadDocument>, query: SessionQuery): Promise<HeadPage> {
  const q = checkSessionQuery(query);
  const and: Filter<HeadDocument>[] = [{ owner: q.owner }, LIVE_HEAD as Filter<HeadDocument>];
  if (q.agent !== undefined) and.push({ agent: q.agent });
  if (q.labels)
    and.push({ labelPairs: { $all: Object.entries(q.labels).map(([key, value]) => labelPair(key, value)) } });
  if (q.updatedAfter !== undefined) and.push({ updatedAt: { $gt: q.updatedAfter } });
  and.push({ $or: [{ expiresAt: null }, { expiresAt: { $gt: q.now } }] } as Filter<HeadDocument>);
  if (q.after) {
    // The range bound outside the $or bounds the index scan: a deep page starts where the last one ended.
    and.push({ updatedAt: { $lte: q.after.updatedAt } });
    and.push({
      $or: [
        { updatedAt: { $lt: q.after.updatedAt } },
        { updatedAt: q.after.updatedAt, _id: { $lt: q.after.sessionId } },
      ],
    });
  }
  const docs = await heads
    .find({ $and: and }, { projection: WITHOUT_TOKENS })
    .sort({ updatedAt: -1, _id: -1 })
    .limit(q.pageSize + 1)
    .toArray();
  const page = docs.slice(0, q.pageSize).map(fromHeadDocument);
  if (docs.length <= q.pageSize) return { heads: page };
  const last = page[page.length - 1]!;
  return { heads: page, nextPageToken: encodeHeadPageToken({ updatedAt: last.updatedAt, sessionId: last.sessionId }) };
}

/**
 * The heads carrying a lease (valid or lapsed), of every owner, the earliest
 * `lease.expiresAt` first (ties: smaller `_id`), at most `limit`: one query on
 * the sparse `{"lease.expiresAt": 1, _id: 1}` index (`$exists` on it lets
 * MongoDB use a sparse index), which also holds the sort: nothing is sorted
 * in memory.
 * Heads being deleted are left out (as getHead reads them absent); an expired
 * head not yet removed is listed, as getHead returns it.
 */
export async function listLeasedHeadDocuments(heads: Collection<HeadDocument>, limit: number): Promise<SessionHead[]> {
  const filter = { "lease.expiresAt": { $exists: true }, ...LIVE_HEAD } as Filter<HeadDocument>;
  const docs = await heads
    .find(filter, { projection: WITHOUT_TOKENS })
    .sort({ "lease.expiresAt": 1, _id: 1 })
    .limit(limit)
    .toArray();
  return docs.map(fromHeadDocument);
}

/** What {@link removeSession} found and did. */
export interface Removal {
  /** A live (not already deleting) head matched and was removed. */
  headRemoved: boolean;
  /** Anything at all was deleted (head, records, chunks). */
  removedAnything: boolean;
}

/**
 * Deletes everything of a session in an order no reader can catch half done:
 *
 * 1. The head becomes a deletion marker (`deletingAt`, `version` -1, `expireAt`
 *    = now + {@link STALLED_DELETION_MS}) with one findAndModify. From then on
 *    getHead and listHeads see no session, every compare-and-set on it fails
 *    (no expectedVersion is -1), and a commit creating the session anew
 *    (expectedVersion 0) fails on the duplicate `_id` and removes its own
 *    record: nothing new can attach to the session while it is deleted.
 *    Without `onlyIf` the marker is upserted, so even a session without a head
 *    (records left by a crash) is deleted under a marker.
 * 2. Every record of the session (`deleteMany({sessionId})`), then its chunk
 *    documents, by `sessionId` and by the chunk sets its records referenced
 *    (chunks written before chunks carried `sessionId`), then its chunk logs
 *    (`stream_chunks`, by `sessionId`). Records go first: a reader of a record
 *    whose chunks are gone re-reads the record and finds it deleted.
 * 3. The marker.
 *
 * A racing `updateRecord` finds its record gone (null) or, when its write
 * landed first, is deleted with it; chunks it wrote after step 2 are removed by
 * itself when its conditional write matches nothing. If the deleter dies
 * between steps, the marker stays (reads still see no session) until a
 * sweep finishes the deletion or MongoDB's TTL monitor drops the marker once
 * its `expireAt` passes (the records are then orphans for the sweep's
 * orphan pass).
 *
 * `onlyIf` restricts step 1 to a head matching it (the sweep: still expired);
 * when it does not match, nothing is deleted.
 */
export async function removeSession(
  c: StoreCollections,
  sessionId: string,
  onlyIf?: Filter<HeadDocument>,
): Promise<Removal> {
  const now = new Date();
  const marker = {
    $set: { deletingAt: now, version: DELETING_VERSION, expireAt: new Date(now.getTime() + STALLED_DELETION_MS) },
  };
  let before: HeadDocument | null;
  if (onlyIf) {
    before = await c.heads.findOneAndUpdate({ ...onlyIf, _id: sessionId }, marker, { returnDocument: "before" });
    if (!before) return { headRemoved: false, removedAnything: false };
  } else {
    before = await markUpserting(c.heads, sessionId, marker);
  }
  const headRemoved = before !== null && before.deletingAt === undefined;
  const sets = (await c.records.distinct("checkpointChunks.set", {
    sessionId,
    checkpointChunks: { $ne: null },
  })) as string[];
  const records = await c.records.deleteMany({ sessionId });
  const chunks = await c.chunks.deleteMany({ sessionId });
  const chunkSets = sets.length > 0 ? await c.chunks.deleteMany({ set: { $in: sets } }) : { deletedCount: 0 };
  const logs = await c.streamChunks.deleteMany({ sessionId });
  await c.toolCalls.deleteMany({ sessionId });
  await c.heads.deleteOne({ _id: sessionId, version: DELETING_VERSION });
  const deleted = records.deletedCount + chunks.deletedCount + chunkSets.deletedCount + logs.deletedCount;
  return { headRemoved, removedAnything: before !== null || deleted > 0 };
}

/** Step 1 without a condition: marks the head, inserting the marker when there is none. Resolves to the document before. */
async function markUpserting(
  heads: Collection<HeadDocument>,
  sessionId: string,
  marker: Document,
): Promise<HeadDocument | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await heads.findOneAndUpdate({ _id: sessionId }, marker, { upsert: true, returnDocument: "before" });
    } catch (err) {
      // A commit created the head between the lookup and the insert of the upsert: mark that one.
      if (!isDuplicateKey(err) || attempt >= 2) throw err;
    }
  }
}

/** How the sweep looks for orphans (records and chunks of sessions whose head is gone). */
export interface OrphanScan {
  /** Index entries of each collection examined per sweep. */
  batch: number;
  /** Records and chunks stored less than this long before `now` are never deleted as orphans. */
  graceMs: number;
}

/**
 * Deletes every session whose head has expired at `now` (expireAt <= now),
 * each as {@link removeSession} with the condition that it is still expired
 * (a session written meanwhile is kept), and finishes deletions whose marker
 * has stalled; then runs one step of the orphan pass. Resolves to the number
 * of expired sessions removed (heads, plus orphaned sessions whose head
 * MongoDB's TTL monitor had removed first).
 */
export async function sweepExpiredSessions(
  c: StoreCollections,
  now: number,
  orphans: OrphanScan,
  beforeExpire?: ExpireHook,
): Promise<number> {
  const expired = expiredHeads(now, c.ttlGraceMs);
  const seen = new Set<string>();
  let removed = 0;
  for (;;) {
    const batch = await c.heads
      .find(expired, { projection: beforeExpire ? WITHOUT_TOKENS : { _id: 1 } })
      .sort({ expireAt: 1 })
      .limit(SWEEP_BATCH)
      .toArray();
    const fresh = batch.filter((d) => !seen.has(d._id));
    if (fresh.length === 0) break;
    for (let i = 0; i < fresh.length; i += SWEEP_CONCURRENCY) {
      const slice = fresh.slice(i, i + SWEEP_CONCURRENCY);
      for (const doc of slice) seen.add(doc._id);
      // A live head's hook runs before its deletion (a deletion marker's session is being deleted already).
      if (beforeExpire)
        for (const doc of slice) if (doc.deletingAt === undefined) await beforeExpire(fromHeadDocument(doc));
      const results = await Promise.all(slice.map((doc) => removeSession(c, doc._id, expired)));
      removed += results.filter((r) => r.headRemoved).length;
    }
    if (batch.length < SWEEP_BATCH) break;
  }
  return removed + (await sweepOrphans(c, now, orphans));
}

/**
 * The heads expired at `now`: `expireAt <= now` (heads written without a
 * grace, deletion markers), or, with `ttlGraceMs`, live heads whose
 * `expireAt` is within the grace and whose `expiresAt` has passed (the
 * range on `expireAt` keeps the query on the TTL index; beyond the expired
 * heads it examines only heads written without the grace that expire
 * within it).
 */
function expiredHeads(now: number, ttlGraceMs: number): Filter<HeadDocument> {
  const cutoff = new Date(now);
  if (ttlGraceMs <= 0) return { expireAt: { $lte: cutoff } };
  return {
    $or: [
      { expireAt: { $lte: cutoff } },
      { expireAt: { $lte: new Date(now + ttlGraceMs) }, expiresAt: { $lte: now }, deletingAt: { $exists: false } },
    ],
  } as Filter<HeadDocument>;
}

/**
 * One bounded step of the orphan pass. MongoDB's TTL index deletes expired
 * heads only; their records and chunks stay until a sweep finds them. Each
 * sweep takes the next `batch` index entries of `{sessionId}` in `snapshots`,
 * in `checkpoint_chunks` and in `stream_chunks` after its cursor (round robin:
 * the cursor wraps to the start once a scan reaches the end), looks the
 * distinct sessionIds up in `heads` with one `$in` query, and for each session
 * without a head deletes its records and chunks stored more than `graceMs`
 * before `now` (a commit inserts its record before it writes the head: a
 * young record may be a session being created), and its chunk logs (a log is
 * appended only once its session's pending row is committed, head and all:
 * a log without a head is always an orphan). Sessions that do have a head
 * get their pending records older than `graceMs` settled (see
 * settlePendingRecords): those of commits that did not land are deleted.
 * A whole collection is covered in (its size / batch) sweeps. The position
 * lives in `store_meta` (orphan-scan-position.ts): a restarted instance, or
 * another instance, continues where the last sweep stopped.
 */
async function sweepOrphans(c: StoreCollections, now: number, scan: OrphanScan): Promise<number> {
  if (scan.batch < 1) return 0;
  const cursors = await loadOrphanScanPosition(c.meta);
  const fromRecords = await nextSessionIds(c.records as unknown as Collection<Document>, cursors.records, scan.batch);
  const fromChunks = await nextSessionIds(c.chunks as unknown as Collection<Document>, cursors.chunks, scan.batch);
  const fromLogs = await nextSessionIds(
    c.streamChunks as unknown as Collection<Document>,
    cursors.streamChunks,
    scan.batch,
  );
  await saveOrphanScanPosition(c.meta, {
    records: fromRecords.cursor,
    chunks: fromChunks.cursor,
    streamChunks: fromLogs.cursor,
  });
  const candidates = [...new Set([...fromRecords.ids, ...fromChunks.ids, ...fromLogs.ids])];
  if (candidates.length === 0) return 0;
  const heads = new Map(
    (
      await c.heads
        .find(
          { _id: { $in: candidates } },
          { projection: { _id: 1, recentTokens: 1, pendingCommits: 1, headSnapshotId: 1, deletingAt: 1 } },
        )
        .toArray()
    ).map((d) => [d._id, d] as const),
  );
  const cutoff = new Date(now - scan.graceMs);
  const old = { $or: [{ storedAt: { $lte: cutoff } }, { storedAt: { $exists: false } }] };
  await settlePendingRecords(c, heads, cutoff);
  let removed = 0;
  for (const sessionId of candidates) {
    if (heads.has(sessionId)) continue;
    const oldRecords: Filter<RecordDocument> = { sessionId, ...old };
    const sets = (await c.records.distinct("checkpointChunks.set", {
      ...oldRecords,
      checkpointChunks: { $ne: null },
    })) as string[];
    const records = await c.records.deleteMany(oldRecords);
    const chunks = await c.chunks.deleteMany({ sessionId, ...old } as Filter<ChunkDocument>);
    const chunkSets = sets.length > 0 ? await c.chunks.deleteMany({ set: { $in: sets } }) : { deletedCount: 0 };
    const logs = await c.streamChunks.deleteMany({ sessionId });
    await c.toolCalls.deleteMany({ sessionId });
    if (records.deletedCount + chunks.deletedCount + chunkSets.deletedCount + logs.deletedCount > 0) removed++;
  }
  return removed;
}

/**
 * The distinct sessionIds among the next `batch` documents of `collection`
 * after `cursor` in sessionId order (a covered walk of its sessionId index),
 * and where the next scan continues ("" once this one reached the end).
 */
async function nextSessionIds(
  collection: Collection<Document>,
  cursor: string,
  batch: number,
): Promise<{ ids: string[]; cursor: string }> {
  const groups = await collection
    .aggregate<{ _id: string; n: number }>([
      { $match: { sessionId: { $gt: cursor } } },
      { $sort: { sessionId: 1 } },
      { $limit: batch },
      { $project: { _id: 0, sessionId: 1 } },
      { $group: { _id: "$sessionId", n: { $sum: 1 } } },
      { $sort: { _id: 1 } },
    ])
    .toArray();
  const ids = groups.map((g) => g._id).filter((id): id is string => typeof id === "string");
  const scanned = groups.reduce((sum, g) => sum + g.n, 0);
  if (scanned < batch || ids.length === 0) return { ids, cursor: "" };
  return { ids, cursor: ids[ids.length - 1]! };
}
