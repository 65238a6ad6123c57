import type { Collection, Db } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { STORE_FORMAT_VERSION } from "../snapshot-store.js";
import type { ChunkDocument } from "./checkpoint-chunks.js";
import type { HeadDocument } from "./head-document.js";
import { isDuplicateKey } from "./mongo-errors.js";
import type { RecordDocument } from "./record-document.js";

/** The meta document recording the layout the store's collections are written in. */
export interface FormatDocument {
  _id: "format";
  format: number;
  createdAt: number;
}

/** The collections of one store (one database, one collection prefix). */
export interface StoreCollections {
  heads: Collection<HeadDocument>;
  records: Collection<RecordDocument>;
  chunks: Collection<ChunkDocument>;
  meta: Collection<FormatDocument>;
}

/** The collections of `prefix` in `db` (nothing is sent to the server). */
export function storeCollections(db: Db, prefix: string): StoreCollections {
  return {
    heads: db.collection<HeadDocument>(`${prefix}heads`),
    records: db.collection<RecordDocument>(`${prefix}snapshots`),
    chunks: db.collection<ChunkDocument>(`${prefix}checkpoint_chunks`),
    meta: db.collection<FormatDocument>(`${prefix}store_meta`),
  };
}

/**
 * First use of a store: checks the format the collections are written in
 * (FAILED_PRECONDITION for another format, including the format-1 layout of
 * older agentd releases), records format {@link STORE_FORMAT_VERSION} when the
 * collections are new, and creates the indexes.
 */
export async function prepareCollections(db: Db, c: StoreCollections): Promise<void> {
  const found = await c.meta.findOne({ _id: "format" });
  if (found) {
    if (found.format !== STORE_FORMAT_VERSION) throw wrongFormat(db, c, found.format);
  } else {
    // Format 1 (before the session ledger) had no meta document: one document per snapshot in
    // `<prefix>snapshots` with the whole snapshot as a JSON string in `data`.
    const legacy = await c.records.findOne({ data: { $type: "string" } } as object, { projection: { _id: 1 } });
    if (legacy) throw wrongFormat(db, c, 1);
    try {
      await c.meta.updateOne(
        { _id: "format" },
        { $setOnInsert: { format: STORE_FORMAT_VERSION, createdAt: Date.now() } },
        { upsert: true },
      );
    } catch (err) {
      if (!isDuplicateKey(err)) throw err; // another instance recorded it at the same moment
    }
    const recorded = await c.meta.findOne({ _id: "format" });
    if (recorded && recorded.format !== STORE_FORMAT_VERSION) throw wrongFormat(db, c, recorded.format);
  }
  // Chains: one range query on (sessionId, turnIndex). Listing: newest first per session.
  await c.records.createIndex({ sessionId: 1, turnIndex: 1 }, { name: "session_turn" });
  await c.records.createIndex({ sessionId: 1, createdAt: -1, _id: -1 }, { name: "session_latest" });
  await c.chunks.createIndex({ set: 1, seq: 1 }, { name: "chunk_set" });
}

function wrongFormat(db: Db, c: StoreCollections, format: unknown): AgentError {
  const where = `MongoDB database "${db.databaseName}", collections "${c.records.collectionName}" / "${c.heads.collectionName}"`;
  const advice =
    format === 1
      ? `Format 1 is the layout of agentd releases before the session ledger (one document per snapshot with a "data" JSON ` +
        `string, no "${c.meta.collectionName}" document). Either keep running the agentd release that wrote it on this data, ` +
        `or start this agentd on an empty database or another collection prefix (mongodb://…/<database>?collectionPrefix=<prefix>); ` +
        `the format-1 documents are left untouched and can be dropped once no longer needed.`
      : `Use the agentd release that wrote format ${String(format)} (see "${c.meta.collectionName}"), or point this agentd at ` +
        `an empty database or another collection prefix (mongodb://…/<database>?collectionPrefix=<prefix>).`;
  return new AgentError(
    "FAILED_PRECONDITION",
    `${where} hold session data written in store format ${String(format)}; this agentd reads format ${STORE_FORMAT_VERSION}. ${advice}`,
    { details: { database: db.databaseName, collection: c.records.collectionName, foundFormat: format, expectedFormat: STORE_FORMAT_VERSION } },
  );
}
