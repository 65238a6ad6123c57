import type { Collection, Db } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { STORE_FORMAT_VERSION } from "../snapshot-store.js";
import { assertChangeStreams } from "./change-stream-support.js";
import type { ChunkDocument } from "./checkpoint-chunks.js";
import type { StreamChunkDocument } from "./chunk-document.js";
import type { HeadDocument } from "./head-document.js";
import { ensureIndexes, type IndexSpec } from "./index-setup.js";
import { isDuplicateKey } from "./mongo-errors.js";
import type { RecordDocument } from "./record-document.js";
import { TOOL_CALL_INDEXES, type ToolCallDocument } from "./tool-call-collection.js";

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
  /** The chunk logs of detached work (see ChunkCollection). */
  streamChunks: Collection<StreamChunkDocument>;
  /** The tool-call journals of turns not yet committed (see ToolCallCollection). */
  toolCalls: Collection<ToolCallDocument>;
  meta: Collection<FormatDocument>;
  /** The store's `ttlGraceMs` (0 without): heads' `expireAt` is `expiresAt` plus this. */
  ttlGraceMs: number;
}

/** The collections of `prefix` in `db` (nothing is sent to the server); heads expire `ttlGraceMs` late in the TTL index. */
export function storeCollections(db: Db, prefix: string, ttlGraceMs = 0): StoreCollections {
  return {
    ttlGraceMs,
    heads: db.collection<HeadDocument>(`${prefix}heads`),
    records: db.collection<RecordDocument>(`${prefix}snapshots`),
    chunks: db.collection<ChunkDocument>(`${prefix}checkpoint_chunks`),
    streamChunks: db.collection<StreamChunkDocument>(`${prefix}stream_chunks`),
    toolCalls: db.collection<ToolCallDocument>(`${prefix}tool_calls`),
    meta: db.collection<FormatDocument>(`${prefix}store_meta`),
  };
}

/** The indexes of `<prefix>snapshots`: a chain is one range query on (sessionId, turnIndex); a listing walks (sessionId, createdAt desc, _id desc). */
export const RECORD_INDEXES: readonly IndexSpec[] = [
  { name: "session_turn", key: { sessionId: 1, turnIndex: 1 } },
  { name: "session_latest", key: { sessionId: 1, createdAt: -1, _id: -1 } },
];

/**
 * The indexes of `<prefix>checkpoint_chunks`: a checkpoint's chunks by set, in
 * order; and by session, so deleting a session removes its chunks with one
 * indexed `deleteMany` (chunk documents are large: never scan them).
 */
export const CHUNK_INDEXES: readonly IndexSpec[] = [
  { name: "chunk_set", key: { set: 1, seq: 1 } },
  { name: "chunk_session", key: { sessionId: 1 } },
];

/**
 * The indexes of `<prefix>stream_chunks`: a log's chunks by sequence, unique
 * (reads, the follow-up check, and no sequence stored twice); the TTL index
 * on `expireAt` (MongoDB removes chunks whose keep-until passed by itself;
 * it also serves `sweepChunks`); by session, so deleting a session removes
 * its logs with one indexed `deleteMany`.
 */
export const STREAM_CHUNK_INDEXES: readonly IndexSpec[] = [
  { name: "log_sequence", key: { snapshotId: 1, sequence: 1 }, unique: true },
  {
    name: "expire_at_ttl",
    key: { expireAt: 1 },
    expireAfterSeconds: 0,
    expires: { documents: "chunks", sweep: "chunk logs" },
  },
  { name: "log_session", key: { sessionId: 1 } },
];

/**
 * The indexes of `<prefix>heads`: a listing walks one owner's heads newest
 * first on (updatedAt, _id), the keyset its page tokens point into; the TTL
 * index on `expireAt` lets MongoDB delete expired heads by itself (and serves
 * the sweep's `expireAt <= now` query); the sparse index on
 * `{lease.expiresAt, _id}` holds only the heads with a lease, in the order
 * `listLeasedHeads` walks (earliest expiry first, ties by sessionId), so
 * its sort is read off the index. (Stores created before it also hold a
 * `lease_expires_at` index on `lease.expiresAt` alone, which can be dropped.)
 */
export const HEAD_INDEXES: readonly IndexSpec[] = [
  { name: "owner_updated", key: { owner: 1, updatedAt: -1, _id: -1 } },
  { name: "expire_at_ttl", key: { expireAt: 1 }, expireAfterSeconds: 0 },
  // Covers listLeasedHeads' whole sort (expiry, then _id): no in-memory sort of the leased heads.
  { name: "lease_expires_id", key: { "lease.expiresAt": 1, _id: 1 }, sparse: true },
];

/**
 * First use of a store: checks the format the collections are written in
 * (FAILED_PRECONDITION for another format, including the format-1 layout of
 * older agentd releases), records format {@link STORE_FORMAT_VERSION} when the
 * collections are new, makes sure the indexes exist (an equivalent index
 * under another name serves; a TTL index with another setting is reported to
 * `warn`), and checks that the deployment runs change streams
 * (FAILED_PRECONDITION for a standalone mongod).
 */
export async function prepareCollections(db: Db, c: StoreCollections, warn?: (message: string) => void): Promise<void> {
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
  await ensureIndexes(c.records, RECORD_INDEXES, warn);
  await ensureIndexes(c.chunks, CHUNK_INDEXES, warn);
  await ensureIndexes(c.heads, HEAD_INDEXES, warn);
  await ensureIndexes(c.streamChunks, STREAM_CHUNK_INDEXES, warn);
  await ensureIndexes(c.toolCalls, TOOL_CALL_INDEXES, warn);
  await assertChangeStreams(db, c.records);
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
    {
      details: {
        database: db.databaseName,
        collection: c.records.collectionName,
        foundFormat: format,
        expectedFormat: STORE_FORMAT_VERSION,
      },
    },
  );
}
