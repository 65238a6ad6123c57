import { AgentError } from "../src/errors/agent-error.js";
import type { ChunkLogKey, StoredChunk } from "./chunk-log.js";
import { isValidSnapshotId } from "./snapshot-identity.js";

/** The latest epoch ms a JavaScript Date can hold: the largest keep-until time a store accepts. */
export const MAX_KEEP_UNTIL = 8.64e15;

function invalid(message: string): AgentError {
  return new AgentError("INVALID_ARGUMENT", message);
}

/** Throws INVALID_ARGUMENT unless `key` names a session (non-empty string) and a valid snapshot ID (see `isValidSnapshotId`). */
export function checkChunkLogKey(key: ChunkLogKey, action: string): void {
  const { sessionId, snapshotId } = (key ?? {}) as Partial<ChunkLogKey>;
  if (typeof sessionId !== "string" || sessionId === "")
    throw invalid(`${action}: the key needs a session ID (a non-empty string), got ${JSON.stringify(sessionId)}`);
  if (typeof snapshotId !== "string" || !isValidSnapshotId(snapshotId))
    throw invalid(
      `${action}: invalid snapshot ID ${JSON.stringify(snapshotId)} in the key: use the detached invocation's snapshot ID ` +
        `(1-200 letters, digits, '.', '_' or '-', starting with a letter or digit)`,
    );
}

/** Throws INVALID_ARGUMENT unless `keepUntil` is an integer epoch ms from 0 to {@link MAX_KEEP_UNTIL}. */
export function checkKeepUntil(keepUntil: number, action: string): void {
  if (!Number.isSafeInteger(keepUntil) || keepUntil < 0 || keepUntil > MAX_KEEP_UNTIL)
    throw invalid(
      `${action}: keepUntil must be an integer epoch-millisecond time from 0 to ${MAX_KEEP_UNTIL} (got ${String(keepUntil)})`,
    );
}

/** Throws INVALID_ARGUMENT unless `now` is a finite number (epoch ms); the message matches `sweepExpired`'s. */
export function checkNow(now: number, action: string): void {
  if (typeof now !== "number" || !Number.isFinite(now))
    throw invalid(`${action}: now must be an epoch-millisecond number (got ${String(now)})`);
}

/** Throws INVALID_ARGUMENT unless `afterSequence` and `limit` are integers ≥ 0. */
export function checkRead(key: ChunkLogKey, afterSequence: number, limit: number): void {
  checkChunkLogKey(key, "readChunks");
  if (!Number.isSafeInteger(afterSequence) || afterSequence < 0)
    throw invalid(`readChunks: afterSequence must be an integer >= 0 (got ${String(afterSequence)})`);
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw invalid(`readChunks: limit must be an integer >= 0 (got ${String(limit)})`);
}

/**
 * Checks an append (key, a non-empty array of chunks whose sequences are
 * integers ≥ 1, consecutive within the append, keep-until) and serializes
 * each chunk once. Resolves to the chunks' JSON, in order. INVALID_ARGUMENT
 * for a bad argument or a chunk that is not JSON (a BigInt, a cycle,
 * `undefined`); RESOURCE_EXHAUSTED for a chunk too large for one string.
 */
export function checkAppend(key: ChunkLogKey, chunks: readonly StoredChunk[], keepUntil: number): string[] {
  checkChunkLogKey(key, "appendChunks");
  if (!Array.isArray(chunks) || chunks.length === 0)
    throw invalid("appendChunks: chunks must be a non-empty array (use keepChunks to move the keep-until time alone)");
  const first = (chunks[0] as Partial<StoredChunk> | undefined)?.sequence;
  chunks.forEach((stored: Partial<StoredChunk> | undefined, i) => {
    const sequence = stored?.sequence;
    if (!Number.isSafeInteger(sequence) || (sequence as number) < 1)
      throw invalid(`appendChunks: chunk ${i} has sequence ${String(sequence)}; a sequence is an integer >= 1`);
    if (sequence !== (first as number) + i)
      throw invalid(
        `appendChunks: sequences within one append must be consecutive: chunk ${i} has sequence ${String(sequence)}, expected ${(first as number) + i}`,
      );
  });
  checkKeepUntil(keepUntil, "appendChunks");
  return chunks.map((stored) => chunkJson(key, stored));
}

function chunkJson(key: ChunkLogKey, stored: StoredChunk): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(stored.chunk);
  } catch (err) {
    if (err instanceof RangeError)
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `appendChunks: chunk ${stored.sequence} of snapshot ${key.snapshotId} is too large to store (${err.message}); nothing was appended`,
        { cause: err },
      );
    throw invalid(`appendChunks: chunk ${stored.sequence} is not a JSON value (${(err as Error).message})`);
  }
  if (json === undefined) throw invalid(`appendChunks: chunk ${stored.sequence} is not a JSON value`);
  return json;
}
