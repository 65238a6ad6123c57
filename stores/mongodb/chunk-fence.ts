import type { Collection } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { ChunkLogKey } from "../chunk-log.js";
import type { StreamChunkDocument } from "./chunk-document.js";
import { KEEP_SEQUENCE } from "./chunk-retention.js";
import { isDuplicateKey } from "./mongo-errors.js";

// Fencing a chunk log by run. Each chunk document carries the run that appended it (`run`, 0 when
// absent). A takeover claims the log by appending its first chunk at the log's next free sequence
// (claimLog); the unique (snapshotId, sequence) index then refuses the stalled earlier run's next
// append, which can only be at that sequence or one of the new run's (an earlier run appends
// consecutive sequences, one append at a time), and the refusal names the later run (ABORTED).

/** What is stored at `sequences`, by sequence: the run that appended each. */
async function runsAt(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey,
  sequences: readonly number[],
): Promise<Map<number, number>> {
  const docs = await collection
    .find(
      { snapshotId: key.snapshotId, sessionId: key.sessionId, sequence: { $in: [...sequences] } },
      { projection: { _id: 0, sequence: 1, run: 1 } },
    )
    .toArray();
  return new Map(docs.map((doc) => [doc.sequence, doc.run ?? 0]));
}

/** ABORTED for an append of `run` to a log a later run claimed. */
function superseded(key: ChunkLogKey, run: number, by: number): AgentError {
  return new AgentError(
    "ABORTED",
    `the chunk log of snapshot ${key.snapshotId} was taken over by run ${by} of its work; this run's (${run}) append is refused`,
    { details: { snapshotId: key.snapshotId, run, supersededBy: by } },
  );
}

/**
 * After a duplicate key on an append of run `key.run` at `sequences`: true
 * when this run already holds every one of them (a repeated append: done);
 * throws ABORTED when a later run holds any of them; false otherwise (the
 * caller reports the duplicate).
 */
export async function appendedByRun(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey,
  sequences: readonly number[],
): Promise<boolean> {
  if (key.run === undefined) return false;
  const held = await runsAt(collection, key, sequences);
  for (const run of held.values()) if (run > key.run) throw superseded(key, key.run, run);
  return sequences.every((sequence) => held.get(sequence) === key.run);
}

/** The log's highest chunk after `after` (its sequence and run), or `after` itself when there is none. */
async function lastChunk(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey,
  after: number,
): Promise<{ sequence: number; run?: number }> {
  const last = await collection.findOne(
    { snapshotId: key.snapshotId, sessionId: key.sessionId, sequence: { $gt: Math.max(after, KEEP_SEQUENCE) } },
    { sort: { sequence: -1 }, projection: { _id: 0, sequence: 1, run: 1 } },
  );
  return last ?? { sequence: after };
}

/** The sequence of run `key.run`'s first chunk after `after` (the log's last chunk is one of its). */
async function firstOfRun(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey & { run: number },
  after: number,
): Promise<number> {
  const first = await collection.findOne(
    { snapshotId: key.snapshotId, sessionId: key.sessionId, sequence: { $gt: after }, run: key.run },
    { sort: { sequence: 1 }, projection: { _id: 0, sequence: 1 } },
  );
  return first!.sequence;
}

/** How many chunks of an earlier run a claim lets land ahead of it before giving up (UNAVAILABLE). */
const CLAIM_ATTEMPTS = 100;

/**
 * Appends run `key.run`'s first chunk at the log's next free sequence after
 * `after`, counting any chunk an earlier run appends meanwhile; resolves with
 * its sequence. ABORTED when a later run claimed the log first (its chunk is
 * the log's last, or holds the sequence this claim tried).
 */
export async function claimLog(
  collection: Collection<StreamChunkDocument>,
  key: ChunkLogKey & { run: number },
  after: number,
  documentAt: (sequence: number) => StreamChunkDocument,
): Promise<number> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const last = await lastChunk(collection, key, after);
    if ((last.run ?? 0) > key.run) throw superseded(key, key.run, last.run!);
    // This run claimed the log before (an attempt whose reply was lost): its first chunk is the claim.
    if (last.run === key.run) return firstOfRun(collection, key, after);
    const sequence = last.sequence + 1;
    try {
      await collection.insertOne(documentAt(sequence));
      return sequence;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      // Our own earlier attempt (a lost reply) holds it: claimed. A later run: ABORTED. An earlier run: go on after it.
      if (await appendedByRun(collection, key, [sequence])) return sequence;
    }
  }
  throw new AgentError(
    "UNAVAILABLE",
    `the chunk log of snapshot ${key.snapshotId}: an earlier run kept appending while run ${key.run} took it over; retry`,
  );
}
