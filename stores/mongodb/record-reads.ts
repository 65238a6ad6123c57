import type { Collection, Filter } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { chainFrom, walkChain } from "../ledger/state-chain.js";
import { decodePageToken, encodePageToken, pageSizeOf } from "../snapshot-order.js";
import type { RecordPage, SnapshotPageRequest, SnapshotRecord } from "../snapshot-store.js";
import type { CheckpointChunks } from "./checkpoint-chunks.js";
import { pendingRecordCommitted, readHeadTokens, type HeadTokens } from "./commit-outcome.js";
import type { HeadDocument } from "./head-document.js";
import { decodeRecord, inlineBytes, type RecordDocument } from "./record-document.js";

/** A record as read, with the document it came from (the base of a conditional rewrite). */
export interface LoadedRecord<S> {
  record: SnapshotRecord<S>;
  doc: RecordDocument;
  /** The serialized checkpoint when it came from chunks (lets an unchanged checkpoint keep its chunks). */
  chunkedJson?: string;
}

/** Documents per cursor batch of a listing with state (each can be up to 16 MiB): what one round trip holds in memory. */
const LIST_BATCH_WITH_STATE = 8;

/** Default byte budget of one listing page's state: a page that reaches it ends early, with a next-page token. */
export const DEFAULT_PAGE_STATE_BYTES = 64 * 1024 * 1024;

/** How often a read retries when a concurrent rewrite replaced the chunks it was loading. */
const CHUNK_READ_ATTEMPTS = 5;

/**
 * The read side of the MongoDB store: records with their chunked checkpoints
 * joined back, chains with one range query, and keyset-paginated listings.
 * A record still marked `pending` (its commit's head write not yet known to
 * have landed) is returned only when the session's head shows that it did
 * (see `pendingRecordCommitted`): one extra head read, only for such records;
 * a read that finds such a record committed hands it to `committedPending`,
 * which settles it.
 */
export class RecordReads<S> {
  constructor(
    private readonly records: Collection<RecordDocument>,
    private readonly chunks: CheckpointChunks,
    private readonly heads: Collection<HeadDocument>,
    /** A listing page with state ends early once its records' state reaches this many bytes (at least one record). */
    private readonly pageStateBytes = DEFAULT_PAGE_STATE_BYTES,
    /** Called with every pending record a read found committed (the store settles it). */
    private readonly committedPending: (doc: RecordDocument) => void = () => undefined,
  ) {}

  /** The record with this ID (checkpoint joined from its chunks), or undefined (also for a record of a commit that did not land). */
  async load(snapshotId: string): Promise<LoadedRecord<S> | undefined> {
    const doc = await this.records.findOne({ _id: snapshotId });
    return doc && (await this.visible(doc)) ? this.complete(doc) : undefined;
  }

  /** False for a pending record whose commit did not land (yet); `heads` caches head reads per session. */
  private async visible(doc: RecordDocument, heads = new Map<string, HeadTokens>()): Promise<boolean> {
    if (!doc.pending) return true;
    let head = heads.get(doc.sessionId);
    if (head === undefined) {
      head = await readHeadTokens(this.heads, doc.sessionId);
      heads.set(doc.sessionId, head);
    }
    if (!pendingRecordCommitted(doc, head)) return false;
    this.committedPending(doc);
    return true;
  }

  /** The session ID of record `snapshotId` (a projected read: no state is transferred), or undefined. */
  async sessionIdOf(snapshotId: string): Promise<string | undefined> {
    const doc = await this.records.findOne({ _id: snapshotId }, { projection: { sessionId: 1 } });
    return doc?.sessionId;
  }

  /**
   * The record of `doc` with its checkpoint joined from chunks. When the
   * chunks are gone (a concurrent rewrite replaced them), re-reads the
   * document and tries again; undefined when the record itself is gone.
   */
  async complete(doc: RecordDocument): Promise<LoadedRecord<S> | undefined> {
    let current: RecordDocument | null = doc;
    for (let attempt = 0; attempt < CHUNK_READ_ATTEMPTS && current; attempt++) {
      const { record, chunks } = decodeRecord<S>(current);
      if (!chunks) return { record, doc: current };
      const json = await this.chunks.read(chunks);
      if (json !== undefined) {
        record.checkpoint = JSON.parse(json) as SnapshotRecord<S>["checkpoint"];
        return { record, doc: current, chunkedJson: json };
      }
      current = await this.records.findOne({ _id: current._id });
    }
    if (!current) return undefined;
    throw new AgentError(
      "DATA_LOSS",
      `snapshot "${doc._id}" cannot be read: the chunk documents of its checkpoint are missing or incomplete (restore the store from a backup)`,
    );
  }

  /**
   * The chain ending at `snapshotId`: the target, then ONE range query for the
   * parent links of the session's records between its nearest checkpoint's
   * turn and its own (served by the `{sessionId, turnIndex}` index, `_id` and
   * `parentId` only), then the chain's records by ID: what moves is the chain
   * plus a few bytes per other record in the range, however many branches
   * and however big their state. Only the checkpoint at its start has its
   * chunks read.
   */
  async chain(snapshotId: string): Promise<SnapshotRecord<S>[] | undefined> {
    const targetDoc = await this.records.findOne({ _id: snapshotId });
    // Only the target is checked: the parent of a record whose commit landed is a record whose commit landed.
    if (!targetDoc || !(await this.visible(targetDoc))) return undefined;
    const target = decodeRecord<S>(targetDoc);
    if (!target.record.delta) {
      const loaded = await this.complete(targetDoc);
      return loaded ? [loaded.record] : undefined;
    }
    const ids = await this.chainIds(targetDoc, target.record.checkpointTurn, target.record.depth);
    const docs = ids.length > 0 ? await this.records.find({ _id: { $in: ids } }).toArray() : [];
    const byId = new Map<string, RecordDocument>(docs.map((d) => [d._id, d]));
    const candidates = docs.filter((d) => d._id !== snapshotId).map((d) => decodeRecord<S>(d).record);
    candidates.push(target.record);
    const chain = await chainFrom(candidates, snapshotId);
    if (!chain) return undefined;
    const base = chain[0]!;
    const baseDoc = byId.get(base.snapshotId);
    if (baseDoc?.checkpointChunks) {
      const loaded = await this.complete(baseDoc);
      if (!loaded?.record.checkpoint) return this.chainAfterRace(snapshotId);
      chain[0] = loaded.record;
    }
    return chain;
  }

  /**
   * The IDs of the chain's ancestors of `target` (at most `depth` of them):
   * parent links followed through ONE range query on (sessionId, turnIndex)
   * that projects only `_id` and `parentId`, so the session's other branches
   * in the range cost a few bytes each, never their state.
   */
  private async chainIds(target: RecordDocument, checkpointTurn: number, depth: number): Promise<string[]> {
    const links = await this.records
      .find(
        { sessionId: target.sessionId, turnIndex: { $gte: checkpointTurn, $lte: target.turnIndex } },
        { projection: { _id: 1, parentId: 1 } },
      )
      .toArray();
    const parentOf = new Map(links.map((d) => [d._id, d.parentId]));
    const ids: string[] = [];
    for (let id = target.parentId; id && ids.length < depth && parentOf.has(id); id = parentOf.get(id) ?? null) {
      ids.push(id);
    }
    return ids;
  }

  /** The checkpoint at a chain's start was rewritten while it was read: read the chain by single lookups. */
  private async chainAfterRace(snapshotId: string): Promise<SnapshotRecord<S>[] | undefined> {
    return walkChain(async (id) => (await this.load(id))?.record, snapshotId);
  }

  /**
   * The session's records newest first, keyset-paginated (the token holds the
   * last record's createdAt and ID). With `page.includeState === false` the
   * query projects the state away (no checkpoint or delta is transferred, no
   * chunk is read) and the records come without `checkpoint` and `delta`.
   * Memory-bounded: documents come in cursor batches (8 at a time with
   * state), and a page with state ends early, with a next-page token, once
   * its records' state reaches the byte budget (64 MiB by default; at least
   * one record per page): a caller asking for 1000 records of 16 MiB gets
   * them over several pages instead of 16 GiB at once.
   */
  async list(sessionId: string, page?: SnapshotPageRequest): Promise<RecordPage<S>> {
    const size = pageSizeOf(page);
    const withState = page?.includeState !== false;
    const filter: Filter<RecordDocument> = { sessionId };
    if (page?.pageToken) {
      const after = decodePageToken(page.pageToken);
      // The range bound outside the $or bounds the index scan: a deep page starts where the last one ended.
      filter.createdAt = { $lte: after.createdAt };
      filter.$or = [
        { createdAt: { $lt: after.createdAt } },
        { createdAt: after.createdAt, _id: { $lt: after.snapshotId } },
      ];
    }
    const cursor = this.records
      .find(filter, withState ? {} : { projection: { state: 0 } })
      .sort({ createdAt: -1, _id: -1 })
      .limit(size + 1)
      .batchSize(withState ? LIST_BATCH_WITH_STATE : size + 1);
    const records: SnapshotRecord<S>[] = [];
    const heads = new Map<string, HeadTokens>();
    let bytes = 0;
    let examined = 0;
    let last: RecordDocument | undefined;
    try {
      for await (const doc of cursor) {
        // A page full, or (with state) over its byte budget: the next page starts after the last record taken.
        if (examined >= size || (last && bytes >= this.pageStateBytes)) {
          return { records, nextPageToken: encodePageToken({ createdAt: last!.createdAt, snapshotId: last!._id }) };
        }
        last = doc;
        examined++;
        if (!(await this.visible(doc, heads))) continue;
        if (!withState) {
          records.push(decodeRecord<S>(doc, false).record);
          continue;
        }
        const loaded = await this.complete(doc);
        if (!loaded) continue;
        records.push(loaded.record);
        bytes += inlineBytes(doc) + (doc.checkpointChunks?.bytes ?? 0);
      }
    } finally {
      await cursor.close();
    }
    return { records };
  }
}
