import type { ObjectId } from "mongodb";

/** One chunk of a chunk log (`<prefix>stream_chunks`). */
export interface StreamChunkDocument {
  _id?: ObjectId;
  snapshotId: string;
  sessionId: string;
  sequence: number;
  /**
   * The chunk's JSON: a string, so any chunk round-trips exactly whatever its
   * keys (BSON refuses keys starting with `$`) and a chunk is never parsed
   * on the server.
   */
  chunk: string;
  /** The keep-until time of this chunk's append (written once; `keepChunks` moves the log's on its keep document). */
  keepUntil?: Date;
  /** The TTL field, written once: `keepUntil` plus the backstop (`TTL_BACKSTOP_MS`, chunk-retention.ts). */
  expireAt: Date;
  /** The run of the work that appended it (see chunk-fence.ts); absent: 0, or written before runs were recorded. */
  run?: number;
}
