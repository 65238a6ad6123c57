import { BSON } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import type { SnapshotRecord } from "../snapshot-store.js";
import { splitCheckpoint, type ChunkedCheckpoint, type ChunkRef } from "./checkpoint-chunks.js";
import { changedSplitFields, joinFields, splitBytes, splitFields, type SplitFields } from "./record-fields.js";

/** MongoDB's maximum BSON document size (16 MiB). */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/** A checkpoint whose serialized record is larger than this is stored in chunk documents. */
export const CHECKPOINT_INLINE_BYTES = 8 * 1024 * 1024;

/**
 * How a snapshot record is stored in `<prefix>snapshots`: the fields queries
 * and the change stream need at top level, the record's metadata one JSON
 * string per field in `meta` and `work` (see record-fields.ts: a heartbeat
 * `$set`s one small path, never the whole metadata), its state (checkpoint or
 * delta) as a JSON string in `state` (so any state round-trips exactly,
 * whatever its keys, and a listing can leave the state out with a
 * projection), and a per-record `version` for optimistic concurrency and
 * status ordering. Documents written before the split hold the metadata as
 * one JSON string in `body` (before `state` existed: the whole record) and
 * are read the same; their first update rewrites them in the split form.
 */
export interface RecordDocument {
  /** The snapshot ID. */
  _id: string;
  /**
   * The snapshot ID again: set together with every status change, because
   * mongo-java-server reports an update's `documentKey` as the update itself;
   * its change events then still name the record.
   */
  snapshotId: string;
  version: number;
  sessionId: string;
  createdAt: number;
  turnIndex: number;
  status: SnapshotStatus;
  parentId: string | null;
  /** Older documents only: JSON of the record without `checkpoint` and `delta` (older still: the whole record). */
  body?: string;
  /** Each field of the record except `checkpoint`, `delta` and `work`, as its JSON (absent in older documents: see `body`). */
  meta?: Record<string, string>;
  /** Each field of the record's detached work, as its JSON; absent when it has none. */
  work?: Record<string, string>;
  /**
   * JSON of `{checkpoint}` or `{delta}`; null when the record has neither (a
   * pending row) or its checkpoint is in chunk documents. Absent in documents
   * written before this field existed.
   */
  state?: string | null;
  /** Set when the checkpoint is in chunk documents. */
  checkpointChunks: ChunkRef | null;
  /**
   * When the record was inserted (client clock; updates keep it): the sweep's
   * orphan pass never deletes a record younger than its grace period, so a
   * commit between its record insert and its head write is left alone.
   * Absent in documents written before it existed (treated as old).
   */
  storedAt?: Date;
  /**
   * Set by `commit` on the record it inserts, cleared once the head has
   * moved to it: while set, the record is visible only when its commit
   * landed (see commit-outcome.ts `recordCommitted`); the sweep settles or
   * deletes such records. Absent in documents of landed commits.
   */
  pending?: boolean;
  /** A value unique to the `commit` call that inserted the record, also pushed to its head's `recentTokens`. Absent in older documents. */
  commitToken?: string;
  /**
   * The tokens of the last {@link UPDATE_TOKEN_SLOTS} `updateRecord` writes, a
   * ring (`{"<slot>": token}`, slot = `updateCount % 16`): each write sets its
   * own slot only, so its oplog entry carries one token, not the list. How an
   * update whose acknowledgement was lost recognises that it was applied,
   * whatever was written after it. Absent until the first update.
   */
  updateTokenRing?: Record<string, string>;
  /** How many `updateRecord` writes the ring has seen (picks the next slot). */
  updateCount?: number;
  /** Older documents only: the same tokens as a list (read, never written). */
  updateTokens?: string[];
}

/** Slots of a record's update-token ring: far more than one update's attempts. */
export const UPDATE_TOKEN_SLOTS = 16;

/** True when `doc`'s update tokens (ring or older list) include one of `tokens`. */
export function holdsUpdateToken(doc: RecordDocument, tokens: ReadonlySet<string>): boolean {
  if (tokens.size === 0) return false;
  if (doc.updateTokens?.some((token) => tokens.has(token))) return true;
  return Object.values(doc.updateTokenRing ?? {}).some((token) => tokens.has(token));
}

/** The record's split metadata; an older document's `body` is split here (migration on read). */
export function storedFields(doc: Pick<RecordDocument, "body" | "meta" | "work">): SplitFields {
  if (doc.meta) return doc.work ? { meta: doc.meta, work: doc.work } : { meta: doc.meta };
  const { checkpoint: _checkpoint, delta: _delta, ...meta } = JSON.parse(doc.body ?? "{}") as Record<string, unknown>;
  return splitFields(meta);
}

/** Serialized bytes of a document's metadata and inline state (what page budgets count). */
export function inlineBytes(doc: Pick<RecordDocument, "body" | "meta" | "work" | "state">): number {
  const meta = doc.meta ? splitBytes(doc) : Buffer.byteLength(doc.body ?? "", "utf8");
  return meta + Buffer.byteLength(doc.state ?? "", "utf8");
}

/** The top-level fields `updateRecord` may change (identity fields never change). */
export type MutableFields = Pick<
  RecordDocument,
  "version" | "turnIndex" | "status" | "meta" | "work" | "state" | "checkpointChunks"
>;

/** A record ready to write: its document and, for a big checkpoint, the chunks to write first. */
export interface EncodedRecord {
  doc: RecordDocument;
  chunks?: ChunkedCheckpoint;
}

/**
 * The next version of a record: greater than the previous one and, being
 * derived from the clock (microsecond-scaled epoch), also greater than any
 * version a record of that ID had before (restore, a restarted in-memory test
 * server), so a subscriber's version gate never drops a genuinely new write.
 */
export function nextVersion(previous: number | undefined): number {
  return Math.max((previous ?? 0) + 1, Date.now() * 1000);
}

/**
 * Builds the document for `record`. A record whose serialized form is over
 * {@link CHECKPOINT_INLINE_BYTES} and holds a checkpoint keeps the checkpoint
 * in chunk documents; anything else that would not fit one document fails
 * with RESOURCE_EXHAUSTED (nothing written). `reuse` is the existing record's
 * chunked checkpoint: when the checkpoint is unchanged its chunks are kept
 * instead of written again.
 */
export function encodeRecord<S>(
  record: SnapshotRecord<S>,
  version: number,
  update: boolean,
  reuse?: { ref: ChunkRef; json: string },
): EncodedRecord {
  const { checkpoint, delta, ...meta } = record;
  const held = { ...(checkpoint !== undefined ? { checkpoint } : {}), ...(delta !== undefined ? { delta } : {}) };
  const doc: RecordDocument = {
    _id: record.snapshotId,
    snapshotId: record.snapshotId,
    version,
    sessionId: record.sessionId,
    createdAt: record.createdAt,
    turnIndex: record.turnIndex,
    status: record.status,
    parentId: record.parentId ?? null,
    ...splitFields(meta as Record<string, unknown>),
    state: Object.keys(held).length > 0 ? JSON.stringify(held) : null,
    checkpointChunks: null,
    storedAt: new Date(),
  };
  const bytes = inlineBytes(doc);
  if (checkpoint === undefined || bytes <= CHECKPOINT_INLINE_BYTES) {
    assertFits(doc, record.snapshotId, update);
    return { doc };
  }
  doc.state = delta !== undefined ? JSON.stringify({ delta }) : null;
  assertFits(doc, record.snapshotId, update);
  const json = JSON.stringify(checkpoint);
  if (reuse && reuse.json === json) {
    doc.checkpointChunks = reuse.ref;
    return { doc };
  }
  const chunks = splitCheckpoint(json, record.sessionId);
  doc.checkpointChunks = chunks.ref;
  return { doc, chunks };
}

function assertFits(doc: RecordDocument, snapshotId: string, update: boolean): void {
  const bytes = BSON.calculateObjectSize(doc as unknown as BSON.Document);
  if (bytes > MAX_DOCUMENT_BYTES) throw tooLarge(snapshotId, bytes, update);
}

/** The RESOURCE_EXHAUSTED error for a record over MongoDB's document limit. */
export function tooLarge(snapshotId: string, bytes: number, update: boolean): AgentError {
  const size = `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return new AgentError(
    "RESOURCE_EXHAUSTED",
    `snapshot ${snapshotId} needs a ${size} document (its delta: one turn's new messages and artifacts; only a checkpoint is ` +
      `split into chunks), over MongoDB's 16 MiB document limit; ${update ? "the stored record is unchanged" : "nothing was written"}. ` +
      `Make the turn smaller (e.g. store large tool results or artifacts elsewhere and reference them) or use the SQLite or PostgreSQL store (64 MiB per record).`,
    { details: { snapshotId, bytes, limitBytes: MAX_DOCUMENT_BYTES } },
  );
}

/** A stored record and where its checkpoint is, when that is not inline. */
export interface DecodedRecord<S> {
  record: SnapshotRecord<S>;
  version: number;
  /** The checkpoint must still be read from these chunks (the record has none yet). */
  chunks?: ChunkRef;
}

/**
 * The record stored in a document, without a chunked checkpoint (see
 * {@link DecodedRecord.chunks}). With `withState: false` the record comes
 * without `checkpoint` and `delta` (whatever the document holds), and a
 * document read with `state` projected away decodes the same way.
 */
export function decodeRecord<S>(doc: RecordDocument, withState = true): DecodedRecord<S> {
  const record = (doc.meta ? joinFields(storedFields(doc)) : JSON.parse(doc.body ?? "{}")) as SnapshotRecord<S>;
  if (!withState) {
    delete record.checkpoint;
    delete record.delta;
    return { record, version: doc.version };
  }
  if (typeof doc.state === "string") Object.assign(record, JSON.parse(doc.state) as Partial<SnapshotRecord<S>>);
  return doc.checkpointChunks
    ? { record, version: doc.version, chunks: doc.checkpointChunks }
    : { record, version: doc.version };
}

/**
 * The update that turns `before` into `after`: `$set` of the changed fields
 * only (one path per changed metadata field), plus `version`; `$unset` of the
 * fields `after` no longer has. `status` (with `snapshotId`) appears only when
 * the status changed, which is what the change stream filters on. An older
 * document (metadata in `body`) is rewritten in the split form.
 */
export function changedFields(
  before: RecordDocument,
  after: RecordDocument,
): { $set: Record<string, unknown>; $unset?: Record<string, ""> } {
  const set: Record<string, unknown> = { version: after.version };
  const unset: string[] = [];
  if (after.status !== before.status) {
    set.status = after.status;
    set.snapshotId = after.snapshotId;
  }
  if (after.turnIndex !== before.turnIndex) set.turnIndex = after.turnIndex;
  const next = storedFields(after);
  if (before.meta) {
    const changed = changedSplitFields(storedFields(before), next);
    Object.assign(set, changed.set);
    unset.push(...changed.unset);
  } else {
    set.meta = next.meta;
    if (next.work) set.work = next.work;
    unset.push("body");
  }
  if (after.state !== before.state) set.state = after.state ?? null;
  if (after.checkpointChunks?.set !== before.checkpointChunks?.set) set.checkpointChunks = after.checkpointChunks;
  return unset.length > 0 ? { $set: set, $unset: Object.fromEntries(unset.map((path) => [path, ""])) } : { $set: set };
}
