import type { Collection, Document } from "mongodb";
import type { ChunkLogKey } from "../chunk-log.js";
import type { StreamChunkDocument } from "./chunk-document.js";
import { isDuplicateKey } from "./mongo-errors.js";

/**
 * How long after its keep-until time MongoDB's TTL monitor may remove a chunk
 * by itself (the backstop for deployments nobody sweeps): 30 days. A chunk's
 * `expireAt` (the TTL field) is written once, at its append, as the append's
 * keep-until plus this; heartbeats never rewrite chunks, they move the log's
 * keep-until on its one keep document instead (see {@link KEEP_SEQUENCE}).
 * Work whose log is kept (by heartbeats) for longer than this after a chunk's
 * append may see that chunk removed by the TTL monitor before the sweep.
 */
export const TTL_BACKSTOP_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The sequence of a log's keep document: one per log (the unique index on
 * (snapshotId, sequence) holds it next to the chunks, whose sequences are ≥ 1),
 * written by `keepChunks`. It says "the log is kept until `keepUntil`, whatever
 * the chunks up to `keptThrough` say"; chunks appended after it count with
 * their own keep-until. Reads (`sequence > afterSequence ≥ 0`) never return it.
 */
export const KEEP_SEQUENCE = 0;

/** The log's keep document (see {@link KEEP_SEQUENCE}). */
export interface KeepDocument {
  snapshotId: string;
  sessionId: string;
  sequence: typeof KEEP_SEQUENCE;
  /** The keep-until time the last `keepChunks` set. */
  keepUntil: Date;
  /** The log's highest chunk sequence when it was set: later chunks count with their own keep-until. */
  keptThrough: number;
  /** `keepUntil` plus {@link TTL_BACKSTOP_MS}: the TTL field. */
  expireAt: Date;
}

/** The TTL field of a document kept until `keepUntil` (epoch ms). */
export function expireAtOf(keepUntil: number): Date {
  return new Date(keepUntil + TTL_BACKSTOP_MS);
}

/**
 * The filter of a log's documents (chunks or keep document) still kept after
 * `cutoff`: `keepUntil` later than it, or, for a chunk written before keep-until
 * had its own field (no `keepUntil`), `expireAt` later than it.
 */
function keptAfter(cutoff: Date): Document {
  return {
    $or: [{ keepUntil: { $gt: cutoff } }, { keepUntil: { $exists: false }, expireAt: { $gt: cutoff } }],
  };
}

/**
 * Sets the log's keep-until (earlier or later) with one write to its keep
 * document, after one indexed read of its last sequence; never touches a
 * chunk. No log (no chunk stored): nothing is written.
 */
export async function keepLog(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey,
  keepUntil: number,
): Promise<void> {
  const last = await collection.findOne(
    { snapshotId: key.snapshotId, sessionId: key.sessionId },
    { sort: { sequence: -1 }, projection: { _id: 0, sequence: 1 } },
  );
  if (!last || last.sequence === KEEP_SEQUENCE) return;
  const keep = collection as unknown as Collection<KeepDocument>;
  const write = (): Promise<unknown> =>
    keep.updateOne(
      { snapshotId: key.snapshotId, sequence: KEEP_SEQUENCE },
      {
        $set: {
          sessionId: key.sessionId,
          keepUntil: new Date(keepUntil),
          keptThrough: last.sequence,
          expireAt: expireAtOf(keepUntil),
        },
      },
      { upsert: true },
    );
  try {
    await write();
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    await write(); // two upserts raced to insert it: it exists now, this one updates it
  }
}

/**
 * True when the log of `snapshotId` is kept after `cutoff`: its keep document
 * says so, or a chunk appended after the keep document (any chunk, without
 * one) was appended with a later keep-until. Two indexed reads at most.
 */
export async function keptLater(
  collection: Collection<StreamChunkDocument>,
  snapshotId: string,
  cutoff: Date,
): Promise<boolean> {
  const keep = await (collection as unknown as Collection<KeepDocument>).findOne(
    { snapshotId, sequence: KEEP_SEQUENCE },
    { projection: { _id: 0, keepUntil: 1, keptThrough: 1 } },
  );
  if (keep && keep.keepUntil > cutoff) return true;
  const after = keep?.keptThrough ?? KEEP_SEQUENCE;
  const later = await collection.findOne(
    { snapshotId, sequence: { $gt: after }, ...keptAfter(cutoff) },
    { projection: { _id: 1 } },
  );
  return later !== null;
}
