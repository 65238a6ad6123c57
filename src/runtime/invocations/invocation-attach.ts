import { AgentError } from "../../errors/agent-error.js";
import type { AgentOutput, AgentStreamChunk } from "../../types/agent-io.js";
import { isTerminalStatus, type SnapshotStatus } from "../../types/snapshot.js";
import { isChunkLog, type ChunkLog, type ChunkLogKey } from "../../../stores/chunk-log.js";
import type {
  SessionStore,
  SnapshotRecord,
  SnapshotSubscriber,
  StoreCallContext,
} from "../../../stores/snapshot-store.js";
import { backgroundStoreOf } from "../background/background-store.js";
import { shapeOutput } from "./invocation-output.js";
import { loadRecordState, ownedRecord } from "../sessions/session-lookup.js";
import { effectiveStatus, livenessRecheckMs } from "../sessions/snapshot-liveness.js";
import { transformContextOf } from "../agents/state-transform.js";
import type { SnapshotAccessTarget, SnapshotReadOptions } from "../sessions/snapshot-access.js";

/** What AttachInvocation streams: chunks in sequence order, then one output. */
export type AttachedItem<S = unknown> = { chunk: AgentStreamChunk } | { output: AgentOutput<S> };

/** Chunks read from the store per query. */
const READ_PAGE = 256;

type AttachStore<S> = SessionStore<S> & SnapshotSubscriber & ChunkLog;

function chunkStoreOf<S>(target: SnapshotAccessTarget<S>): AttachStore<S> {
  const store = backgroundStoreOf(target.name, target.store, "attach");
  if (!isChunkLog(store)) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `the store of agent "${target.name}" keeps no streamed chunks, so there is nothing to attach to ` +
        "(the memory, SQLite, PostgreSQL and MongoDB stores keep them)",
    );
  }
  return store;
}

/** Reads a chunk log forward from a sequence number, checking that no recorded chunk is skipped. */
class ChunkCursor {
  /** True once a chunk was read (from then on sequences must be consecutive). */
  sawChunks = false;

  constructor(
    private readonly log: ChunkLog,
    private readonly key: ChunkLogKey,
    private readonly ctx: StoreCallContext | undefined,
    /** The last sequence read (or the one to read after). */
    public after: number,
  ) {}

  /**
   * The next recorded chunks (at most a page). When the log skips a sequence,
   * the chunks before the gap and `gap`, a DATA_LOSS error to end with.
   */
  async next(): Promise<{ chunks: AgentStreamChunk[]; more: boolean; gap?: AgentError }> {
    const page = await this.log.readChunks(this.key, this.after, READ_PAGE, this.ctx);
    const chunks: AgentStreamChunk[] = [];
    for (const { sequence, chunk } of page) {
      if (this.sawChunks && sequence !== this.after + 1) {
        const gap = new AgentError(
          "DATA_LOSS",
          `chunks ${this.after + 1}–${sequence - 1} of snapshot "${this.key.snapshotId}" are missing from the store`,
        );
        return { chunks, more: false, gap };
      }
      this.sawChunks = true;
      this.after = sequence;
      chunks.push({ ...chunk, sequence });
    }
    return { chunks, more: page.length === READ_PAGE };
  }

  /** Every chunk recorded after the last one read (the work has ended: no more are added); throws at a gap. */
  async *rest(): AsyncGenerator<AgentStreamChunk> {
    for (;;) {
      const { chunks, more, gap } = await this.next();
      yield* chunks;
      if (gap) throw gap;
      if (!more) return;
    }
  }
}

/**
 * Streams the chunks of detached work (the pending snapshot `snapshotId`)
 * whose sequence is greater than `afterSequence`: those already recorded,
 * then the rest as they are recorded (by this process or any other sharing
 * the store), each exactly once and in order, and ends with the work's output
 * once its snapshot is completed, failed or aborted. Chunks come as they were
 * streamed (shaped by the chunk transform for the call that detached).
 *
 * Throws AgentError: INVALID_ARGUMENT (no snapshot ID, a sequence that is not
 * a whole number); NOT_FOUND (unknown, or another agent's or owner's snapshot,
 * or it vanished mid-stream); FAILED_PRECONDITION (the snapshot is not
 * detached work, the store keeps no chunks, or the chunks are past their
 * retention); UNAVAILABLE (the work stopped sending heartbeats before it
 * ended: it reads as expired); DATA_LOSS (the log skips a recorded chunk).
 */
export async function* attachInvocation<S>(
  target: SnapshotAccessTarget<S>,
  request: { snapshotId: string; afterSequence?: number },
  signal: AbortSignal,
  options: SnapshotReadOptions = {},
): AsyncGenerator<AttachedItem<S>> {
  const store = chunkStoreOf(target);
  const { snapshotId } = request;
  if (!snapshotId) throw new AgentError("INVALID_ARGUMENT", "snapshot_id is required");
  const afterSequence = request.afterSequence ?? 0;
  if (!Number.isInteger(afterSequence) || afterSequence < 0) {
    throw new AgentError("INVALID_ARGUMENT", `after_sequence must be a whole number >= 0, got ${afterSequence}`);
  }
  const ctx = options.storeContext;
  const { record: first } = await ownedRecord(store, target.name, snapshotId, ctx);
  if (first.heartbeatAt === undefined) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `snapshot "${snapshotId}" is not detached work: attach to the snapshot ID a DETACHED output returned`,
    );
  }
  const key: ChunkLogKey = { sessionId: first.sessionId, snapshotId };
  const cursor = new ChunkCursor(store, key, ctx, afterSequence);
  const subscription = new AbortController();
  const stop = () => subscription.abort();
  signal.addEventListener("abort", stop, { once: true });
  // Both subscriptions start before the first read, so nothing recorded after that read is missed.
  const appended = store.watchChunks(key, subscription.signal, ctx)[Symbol.asyncIterator]();
  const statuses = store.subscribeStatus(snapshotId, subscription.signal, ctx)[Symbol.asyncIterator]();
  const wakeUps = new WakeUps(appended, statuses, livenessRecheckMs(target.liveness));
  try {
    while (!signal.aborted) {
      const { chunks, more, gap } = await cursor.next();
      for (const chunk of chunks) yield { chunk };
      if (gap) throw gap;
      if (more) continue;
      const record = await store.getRecord(snapshotId, ctx);
      if (!record) throw new AgentError("NOT_FOUND", `snapshot "${snapshotId}" no longer exists in the store`);
      const status = effectiveStatus(record, target.liveness);
      if (status === "expired") {
        throw new AgentError(
          "UNAVAILABLE",
          `the work of snapshot "${snapshotId}" stopped sending heartbeats before it ended (it reads as expired)`,
        );
      }
      if (isTerminalStatus(status)) {
        // Every chunk was recorded before the row ended: read those recorded after the read above.
        for await (const chunk of cursor.rest()) yield { chunk };
        if (!cursor.sawChunks) await checkRetained(store, key, record, target, ctx);
        yield { output: await outputOf(target, store, record, options) };
        return;
      }
      if ((await wakeUps.next()) === "ended" && !signal.aborted) {
        throw new AgentError("UNAVAILABLE", "the store stopped delivering changes (it is closing); attach again");
      }
    }
  } finally {
    signal.removeEventListener("abort", stop);
    subscription.abort();
    void appended.return?.();
    void statuses.return?.();
  }
}

/** Waits for the first of: chunks appended, a status change, or the periodic re-check (expiry, a vanished row). */
class WakeUps {
  private nextAppend: Promise<IteratorResult<void>>;
  private nextStatus: Promise<IteratorResult<SnapshotStatus>>;

  constructor(
    private readonly appended: AsyncIterator<void>,
    private readonly statuses: AsyncIterator<SnapshotStatus>,
    private readonly checkEveryMs: number,
  ) {
    this.nextAppend = appended.next();
    this.nextStatus = statuses.next();
  }

  /** "ended" when a subscription ended (the store closed, or the call was cancelled). */
  async next(): Promise<"woke" | "ended"> {
    let timer: NodeJS.Timeout | undefined;
    const tick = new Promise<"tick">((resolve) => {
      timer = setTimeout(() => resolve("tick"), this.checkEveryMs);
      timer.unref();
    });
    const got = await Promise.race([
      this.nextAppend.then((r) => ({ from: "append" as const, done: r.done === true })),
      this.nextStatus.then((r) => ({ from: "status" as const, done: r.done === true })),
      tick,
    ]);
    clearTimeout(timer);
    if (got === "tick") return "woke";
    if (got.done) return "ended";
    if (got.from === "append") this.nextAppend = this.appended.next();
    else this.nextStatus = this.statuses.next();
    return "woke";
  }
}

/**
 * FAILED_PRECONDITION when an ended invocation has no chunk log left although
 * its retention period is over (the chunks were swept, not "none streamed").
 */
async function checkRetained<S>(
  store: ChunkLog,
  key: ChunkLogKey,
  record: SnapshotRecord<S>,
  target: SnapshotAccessTarget<S>,
  ctx: StoreCallContext | undefined,
): Promise<void> {
  if (Date.now() - record.updatedAt < target.liveness.chunkRetentionMs) return;
  if (await store.hasChunks(key, ctx)) return;
  throw new AgentError(
    "FAILED_PRECONDITION",
    `the chunks of snapshot "${key.snapshotId}" are no longer kept (they are kept ${target.liveness.chunkRetentionMs} ms ` +
      "after the work ends); read its outcome with GetSnapshot",
  );
}

/** The output an ended detached invocation's snapshot reports (state transform applied; no state: it is server-managed). */
async function outputOf<S>(
  target: SnapshotAccessTarget<S>,
  store: SessionStore<S>,
  record: SnapshotRecord<S>,
  options: SnapshotReadOptions,
): Promise<AgentOutput<S>> {
  const state = (await loadRecordState(store, record, options.storeContext)) ?? {
    sessionId: record.sessionId,
    messages: [],
    artifacts: [],
  };
  const output = await shapeOutput({
    state,
    serverManaged: true,
    stateTransform: target.transforms.state,
    transformContext: transformContextOf(target.name, options),
    result: undefined,
    error: undefined,
    sessionId: record.sessionId,
    snapshotId: record.snapshotId,
    finishReason: record.finishReason ?? "unknown",
    ...(record.usage ? { usage: { ...record.usage } } : {}),
  });
  return record.error ? { ...output, finishReason: "failed", error: structuredClone(record.error) } : output;
}
