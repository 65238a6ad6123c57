import type { Collection } from "mongodb";
import type { FormatDocument } from "./store-collections.js";

/** Where the orphan pass continues in each collection (sessionIds ascending; "" = from the start). */
export interface OrphanScanCursors {
  records: string;
  chunks: string;
  streamChunks: string;
}

/** The `store_meta` document holding the orphan pass's position, shared by every instance of the store. */
interface OrphanScanDocument extends OrphanScanCursors {
  _id: "orphan_scan";
}

const ID = "orphan_scan";

function positions(meta: Collection<FormatDocument>): Collection<OrphanScanDocument> {
  return meta as unknown as Collection<OrphanScanDocument>;
}

/**
 * The orphan pass's position as stored in `store_meta` (every instance
 * continues where the last sweep of any instance stopped, also after a
 * restart); from the start when none is stored yet.
 */
export async function loadOrphanScanPosition(meta: Collection<FormatDocument>): Promise<OrphanScanCursors> {
  const doc = await positions(meta).findOne({ _id: ID });
  return { records: doc?.records ?? "", chunks: doc?.chunks ?? "", streamChunks: doc?.streamChunks ?? "" };
}

/** Stores the position the next sweep continues from (one upsert). */
export async function saveOrphanScanPosition(
  meta: Collection<FormatDocument>,
  cursors: OrphanScanCursors,
): Promise<void> {
  await positions(meta).updateOne({ _id: ID }, { $set: { ...cursors } }, { upsert: true });
}
