import { randomUUID } from "node:crypto";
import type { Collection } from "mongodb";
import { isDuplicateKey } from "./mongo-errors.js";

/** Bytes of serialized checkpoint per chunk document (well under MongoDB's 16 MiB document limit). */
export const CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Where a record's checkpoint lives when it is too big to stay inline: the
 * chunk documents of `set` (a fresh ID per write, so a rewrite never touches
 * the chunks a concurrent reader is loading), `count` of them, `bytes` in all.
 */
export interface ChunkRef {
  set: string;
  count: number;
  bytes: number;
}

/** One piece of a serialized checkpoint (`<prefix>checkpoint_chunks`). */
export interface ChunkDocument {
  /** `<set>:<seq>`. */
  _id: string;
  set: string;
  seq: number;
  /** The session of the record the checkpoint belongs to (deleteSession removes chunks by it). Absent in older documents. */
  sessionId?: string;
  /** When the chunk was written (client clock): the sweep's orphan pass leaves younger chunks alone. Absent in older documents. */
  storedAt?: Date;
  /** UTF-8 bytes of the checkpoint's JSON, piece `seq` of the set. */
  data: Buffer;
}

/** A checkpoint split for writing: its reference and the chunk documents to insert. */
export interface ChunkedCheckpoint {
  ref: ChunkRef;
  documents: ChunkDocument[];
}

/** Splits a serialized checkpoint of `sessionId` into chunk documents of at most {@link CHUNK_BYTES} (bytes, not characters). */
export function splitCheckpoint(json: string, sessionId: string): ChunkedCheckpoint {
  const bytes = Buffer.from(json, "utf8");
  const set = randomUUID();
  const storedAt = new Date();
  const documents: ChunkDocument[] = [];
  for (let offset = 0, seq = 0; offset < bytes.length || seq === 0; offset += CHUNK_BYTES, seq++) {
    documents.push({
      _id: `${set}:${seq}`,
      set,
      seq,
      sessionId,
      storedAt,
      data: bytes.subarray(offset, offset + CHUNK_BYTES),
    });
  }
  return { ref: { set, count: documents.length, bytes: bytes.length }, documents };
}

/**
 * The checkpoint chunk documents of one store: written before the record that
 * references them, read back and joined when the record is read, deleted when
 * the record's write fails or a rewrite replaces them.
 */
export class CheckpointChunks {
  constructor(private readonly collection: Collection<ChunkDocument>) {}

  /**
   * Inserts the chunks (one document per insert, so no batch approaches the
   * wire message limit). Repeatable: a chunk already stored (a retry after a
   * lost reply or a failover; a set's IDs are its own random UUID) is skipped.
   */
  async write(chunked: ChunkedCheckpoint): Promise<void> {
    for (const doc of chunked.documents) {
      await this.collection.insertOne(doc).catch((err: unknown) => {
        if (!isDuplicateKey(err)) throw err;
      });
    }
  }

  /** The serialized checkpoint, or undefined when the set is incomplete (deleted by a concurrent rewrite). */
  async read(ref: ChunkRef): Promise<string | undefined> {
    const docs = await this.collection.find({ set: ref.set }, { promoteBuffers: true }).sort({ seq: 1 }).toArray();
    if (docs.length !== ref.count) return undefined;
    const joined = Buffer.concat(docs.map((d) => d.data));
    return joined.length === ref.bytes ? joined.toString("utf8") : undefined;
  }

  /** Deletes a set's chunks (no error when none exist). */
  async remove(set: string): Promise<void> {
    await this.collection.deleteMany({ set });
  }
}
