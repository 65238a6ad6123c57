import type { Collection, Filter } from "mongodb";
import { checkScanCursor, checkScanLimit } from "../head-scan.js";
import type { SessionHead } from "../snapshot-store.js";
import { fromHeadDocument, LIVE_HEAD, WITHOUT_TOKENS, type HeadDocument } from "./head-document.js";

/**
 * Every head of every owner, `_id` (sessionId) ascending in MongoDB's binary
 * string order, strictly after `after`, at most `limit` (see
 * `SessionStore.scanHeads`): one query on the `_id` index, which also holds
 * the sort. Heads being deleted are left out (as getHead reads them absent);
 * an expired head not yet removed is returned, as getHead returns it.
 */
export async function scanHeadDocuments(
  heads: Collection<HeadDocument>,
  after: string | undefined,
  limit: number,
): Promise<SessionHead[]> {
  checkScanCursor(after);
  checkScanLimit(limit);
  const filter = (
    after === undefined ? { ...LIVE_HEAD } : { _id: { $gt: after }, ...LIVE_HEAD }
  ) as Filter<HeadDocument>;
  const docs = await heads.find(filter, { projection: WITHOUT_TOKENS }).sort({ _id: 1 }).limit(limit).toArray();
  return docs.map(fromHeadDocument);
}
