import type { AgentStreamChunk } from "../src/types/agent-io.js";
import type { SessionStore, StoreCallContext } from "./snapshot-store.js";

/**
 * Which invocation's chunks: the session and the pending snapshot row of its
 * detached work. A log is found only under the session it was appended with
 * (a read naming another session finds nothing).
 */
export interface ChunkLogKey {
  sessionId: string;
  /** The detached invocation's row (the snapshot ID its DETACHED output returned); a valid snapshot ID. */
  snapshotId: string;
  /**
   * On appends only: which run of the work writes (0 for the run that
   * detached it, `n` for the work's `n`-th takeover). A store that fences
   * runs (see {@link ChunkLog.claimChunks}) refuses an append of an earlier
   * run once a later one has claimed the log. Reads and watches ignore it.
   */
  run?: number;
}

/** One recorded chunk of an invocation's stream. */
export interface StoredChunk {
  /** Its position in the invocation's stream: consecutive, increasing, ≥ 1 (a log may start after 1). */
  sequence: number;
  /**
   * The chunk as it was streamed: stored as its JSON and returned as that JSON
   * parses (what JSON drops, e.g. `undefined` fields, is dropped). Treat it as
   * read-only: a store may hand out shared, frozen values.
   */
  chunk: AgentStreamChunk;
}

/**
 * Optional capability: the streamed chunks of detached work, kept so that a
 * client can re-attach to the stream (from a sequence number, on any process
 * sharing the store) while the work runs and for a retention period after.
 *
 * Guarantees, in every store and across the processes sharing it: chunks
 * come back in sequence order, each once; a log is removed whole (never a
 * prefix), when its keep-until time has passed (`sweepChunks`) or its session
 * is deleted (`deleteSession`, `sweepExpired`); a read that starts after
 * `appendChunks` resolved returns those chunks (until the log is removed).
 * Following a log live: call `watchChunks`, then read; every append is then
 * either returned by that read or followed by a wake-up.
 *
 * Errors are AgentErrors: INVALID_ARGUMENT for a bad key (empty session ID,
 * invalid snapshot ID), an empty append, a sequence that is not an integer
 * ≥ 1, sequences not consecutive within one append, a negative or fractional
 * `afterSequence`/`limit`, a keep-until or `now` that is not an epoch-ms
 * integer/number in range; RESOURCE_EXHAUSTED for a chunk the store cannot
 * hold (MongoDB: over 16 MiB as a document); the store's own errors
 * (UNAVAILABLE, DATA_LOSS, …) otherwise. Invalid arguments store nothing.
 */
export interface ChunkLog {
  /**
   * Appends `chunks` (their sequences follow the log's last one; the caller
   * is the log's only writer, and this is not checked across appends, except
   * that MongoDB and the SQL stores refuse a sequence they already hold with
   * ALREADY_EXISTS, appending nothing)
   * and keeps the log at least until `keepUntil` (epoch ms; a later
   * keep-until already set stays). Resolves once they are durable in the
   * store (SQLite: fsynced; PostgreSQL and MongoDB: committed).
   */
  appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<void>;
  /**
   * The chunks with a sequence greater than `afterSequence` (an integer ≥ 0),
   * in order, at most `limit` (an integer ≥ 0) of them. `[]` when there are
   * none (or no log, or it was swept).
   */
  readChunks(key: ChunkLogKey, afterSequence: number, limit: number, ctx?: StoreCallContext): Promise<StoredChunk[]>;
  /**
   * Whether a log exists for `key` (appended to and not yet removed): lets a
   * reader tell "no chunks yet / none kept" from "chunks were swept".
   */
  hasChunks(key: ChunkLogKey, ctx?: StoreCallContext): Promise<boolean>;
  /**
   * Sets the log's keep-until time (heartbeat, finish), earlier or later.
   * No-op when there is no log (nothing is created).
   */
  keepChunks(key: ChunkLogKey, keepUntil: number, ctx?: StoreCallContext): Promise<void>;
  /**
   * Yields once, soon after, for each append to `key`'s log made after the
   * call (appends close together may yield once: it is a wake-up, the reader
   * then reads with `readChunks`), from this process or another sharing the
   * store, until `signal` aborts (the iterable then ends and releases its
   * resources). Does not yield for appends made before it was called. May
   * also yield when the log is removed. Invalid arguments throw at the call;
   * a store that cannot watch (MongoDB without change streams:
   * FAILED_PRECONDITION) ends the iteration with its AgentError.
   */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<void>;
  /**
   * Removes every log whose keep-until time is ≤ `now`; resolves to how many
   * were removed, of every owner.
   */
  sweepChunks(now: number, ctx?: StoreCallContext): Promise<number>;
  /**
   * Optional (stores shared by several processes): starts run `key.run` of
   * the log after `afterSequence`. Appends `first(sequence)` as the run's
   * first chunk at the log's next free sequence (after any chunk an earlier
   * run appended meanwhile, which the new run then counts as recorded) and
   * resolves with that sequence. From then on an append of an earlier run
   * fails ABORTED (its writer was taken over), and a repeated append of
   * this run's chunks at sequences it already holds succeeds.
   */
  claimChunks?(
    key: ChunkLogKey & { run: number },
    afterSequence: number,
    first: (sequence: number) => StoredChunk["chunk"],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<number>;
}

/** True when the store keeps the chunks of detached work (and so supports re-attaching to it). */
export function isChunkLog<S>(store: SessionStore<S> | undefined): store is SessionStore<S> & ChunkLog {
  const log = store as Partial<ChunkLog> | undefined;
  return typeof log?.appendChunks === "function" && typeof log.watchChunks === "function";
}
