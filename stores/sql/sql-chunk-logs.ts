import { AgentError } from "../../src/errors/agent-error.js";
import { checkAppend, checkChunkLogKey, checkKeepUntil, checkNow, checkRead } from "../chunk-arguments.js";
import { checkFencedAppend, claimInTransaction, upsertLog } from "./sql-chunk-fence.js";
import type { ChunkLogKey, StoredChunk } from "../chunk-log.js";
import { chunkWatchKey, type SqlChangeFeed } from "./sql-change-feed.js";
import type { SqlEngine, SqlValue } from "./sql-engine.js";

/** Rows per INSERT statement of an append (well under both engines' parameter limits). */
const ROWS_PER_INSERT = 200;

/**
 * The chunk logs of detached work in the SQL store (see `ChunkLog`): a
 * `chunk_logs` row per log (keep-until time, last sequence) and a `chunks`
 * row per chunk, written by one transaction per append that also announces
 * the append to other processes. Reads are one indexed range query.
 */
export class SqlChunkLogs {
  constructor(
    private readonly engine: SqlEngine,
    private readonly feed: SqlChangeFeed,
    private readonly opened: () => Promise<void>,
  ) {}

  /**
   * Appends in one transaction; the keep-until time only moves later.
   * ALREADY_EXISTS for a sequence the log holds. With `key.run` (fenced, see
   * sql-chunk-fence.ts): ABORTED once a later run claimed the log, and a
   * repeated append of chunks this run holds succeeds without writing.
   */
  async appendChunks(key: ChunkLogKey, chunks: readonly StoredChunk[], keepUntil: number): Promise<void> {
    const json = checkAppend(key, chunks, keepUntil);
    await this.opened();
    const first = chunks[0]!.sequence;
    const last = chunks[chunks.length - 1]!.sequence;
    const run = key.run;
    try {
      await this.engine.transaction(async (tx) => {
        if (run === undefined) {
          const greatest = this.engine.dialect === "postgres" ? "GREATEST" : "MAX";
          tx.write(
            `INSERT INTO chunk_logs (session_id, snapshot_id, keep_until, last_sequence) VALUES (?, ?, ?, ?)
             ON CONFLICT (session_id, snapshot_id) DO UPDATE SET
               keep_until = ${greatest}(chunk_logs.keep_until, excluded.keep_until),
               last_sequence = ${greatest}(chunk_logs.last_sequence, excluded.last_sequence)`,
            [key.sessionId, key.snapshotId, keepUntil, last],
          );
        } else {
          const log = await upsertLog(tx, this.engine.dialect, key, keepUntil, last);
          if (await checkFencedAppend(tx, { ...key, run }, log.run, first, last)) return;
        }
        for (let start = 0; start < chunks.length; start += ROWS_PER_INSERT) {
          const slice = chunks.slice(start, start + ROWS_PER_INSERT);
          const params: SqlValue[] = [];
          slice.forEach((c, i) =>
            params.push(key.sessionId, key.snapshotId, c.sequence, json[start + i]!, run ?? null),
          );
          tx.write(
            `INSERT INTO chunks (session_id, snapshot_id, sequence, chunk, run) VALUES ${slice.map(() => "(?, ?, ?, ?, ?)").join(", ")}`,
            params,
          );
        }
        await tx.announce({ kind: "chunks", sessionId: key.sessionId, snapshotId: key.snapshotId, lastSequence: last });
      });
    } catch (err) {
      if (err instanceof AgentError && err.status === "ALREADY_EXISTS")
        throw new AgentError(
          "ALREADY_EXISTS",
          `appendChunks: the log of snapshot ${key.snapshotId} already holds a chunk with one of sequences ${first}..${last}; nothing was appended`,
        );
      throw err;
    }
    this.feed.chunks(key, last);
  }

  /**
   * Starts run `key.run` of the log (see `ChunkLog.claimChunks`): in one
   * transaction, its first chunk at the log's next free sequence after
   * `afterSequence` and the log marked as claimed by it, so that every later
   * append of an earlier run fails ABORTED. Resolves with that sequence.
   */
  async claimChunks(
    key: ChunkLogKey & { run: number },
    afterSequence: number,
    first: (sequence: number) => StoredChunk["chunk"],
    keepUntil: number,
  ): Promise<number> {
    checkRead(key, afterSequence, 1);
    if (!Number.isSafeInteger(key.run) || key.run < 0)
      throw new AgentError("INVALID_ARGUMENT", `claimChunks: run must be an integer >= 0 (got ${String(key.run)})`);
    checkKeepUntil(keepUntil, "claimChunks");
    await this.opened();
    const claimed = await this.engine.transaction(async (tx) => {
      const claim = await claimInTransaction(tx, this.engine.dialect, key, afterSequence, keepUntil, (at) => {
        const [json] = checkAppend(key, [{ sequence: at, chunk: first(at) }], keepUntil);
        return json!;
      });
      if (claim.claimedNow)
        await tx.announce({
          kind: "chunks",
          sessionId: key.sessionId,
          snapshotId: key.snapshotId,
          lastSequence: claim.sequence,
        });
      return claim;
    });
    if (claimed.claimedNow) this.feed.chunks(key, claimed.sequence);
    return claimed.sequence;
  }

  /** The chunks after `afterSequence`, at most `limit`. */
  async readChunks(key: ChunkLogKey, afterSequence: number, limit: number): Promise<StoredChunk[]> {
    checkRead(key, afterSequence, limit);
    if (limit === 0) return [];
    await this.opened();
    const rows = await this.engine.reader.query(
      `SELECT sequence, chunk FROM chunks WHERE session_id = ? AND snapshot_id = ? AND sequence > ? ORDER BY sequence LIMIT ?`,
      [key.sessionId, key.snapshotId, afterSequence, limit],
    );
    return rows.map((r) => ({
      sequence: Number(r.sequence),
      chunk: JSON.parse(String(r.chunk)) as StoredChunk["chunk"],
    }));
  }

  /** Whether the log exists. */
  async hasChunks(key: ChunkLogKey): Promise<boolean> {
    checkChunkLogKey(key, "hasChunks");
    await this.opened();
    const rows = await this.engine.reader.query(
      `SELECT 1 AS found FROM chunk_logs WHERE session_id = ? AND snapshot_id = ?`,
      [key.sessionId, key.snapshotId],
    );
    return rows.length > 0;
  }

  /** Sets the keep-until time of an existing log (creates nothing). */
  async keepChunks(key: ChunkLogKey, keepUntil: number): Promise<void> {
    checkChunkLogKey(key, "keepChunks");
    checkKeepUntil(keepUntil, "keepChunks");
    await this.opened();
    await this.engine.transaction((tx) =>
      tx.run(`UPDATE chunk_logs SET keep_until = ? WHERE session_id = ? AND snapshot_id = ?`, [
        keepUntil,
        key.sessionId,
        key.snapshotId,
      ]),
    );
  }

  /** Wakes for each later append, from this process or another. */
  watchChunks(key: ChunkLogKey, signal: AbortSignal): AsyncIterable<void> {
    checkChunkLogKey(key, "watchChunks");
    const channel = this.feed.watchChunks(key, signal);
    void this.lastSequences([key]).then(
      (found) => this.feed.baseline(key, found.get(chunkWatchKey(key)) ?? 0),
      () => {},
    );
    return channel;
  }

  /** The last sequence of each of `keys`' logs that exists. */
  async lastSequences(keys: ChunkLogKey[]): Promise<Map<string, number>> {
    await this.opened();
    const found = new Map<string, number>();
    for (const key of keys) {
      const rows = await this.engine.reader.query(
        `SELECT last_sequence FROM chunk_logs WHERE session_id = ? AND snapshot_id = ?`,
        [key.sessionId, key.snapshotId],
      );
      if (rows[0]) found.set(chunkWatchKey(key), Number(rows[0].last_sequence));
    }
    return found;
  }

  /** Removes every log whose keep-until time is ≤ `now`, each whole. */
  async sweepChunks(now: number): Promise<number> {
    checkNow(now, "sweepChunks");
    await this.opened();
    return this.engine.transaction(async (tx) => {
      await tx.run(
        `DELETE FROM chunks WHERE (session_id, snapshot_id) IN
           (SELECT session_id, snapshot_id FROM chunk_logs WHERE keep_until <= ?)`,
        [now],
      );
      return tx.run(`DELETE FROM chunk_logs WHERE keep_until <= ?`, [now]);
    });
  }
}
