import { uuidv7 } from "../../../stores/uuid-v7.js";
import { AgentError } from "../../errors/agent-error.js";
import type { SessionState } from "../../types/session-state.js";
import type { FinishReason } from "../../types/snapshot.js";
import { addUsage, type Usage } from "../../types/usage.js";
import type { SnapshotRecord } from "../../../stores/snapshot-store.js";
import type { BackgroundTask } from "./background-work.js";
import { buildRecord, stateFieldsFor, type CommittedPoint } from "../sessions/turn-record.js";
import type { AbortObservedEvent } from "../invocations/runtime-events.js";
import { DetachedChunks, type SequencedChunk } from "./detached-chunks.js";
import type { TurnRequest } from "../sessions/turn-request.js";
import { ControlInbox } from "./control-inbox.js";
import type { DetachedRunOptions, DetachedWorkStart } from "./detached-run-options.js";

type StateFields<S> = ReturnType<typeof stateFieldsFor<S>>;

/** Pause before retrying a chunk write during a store outage: 100 ms doubling to 2 s, never past `until`. */
function outagePause(attempt: number, until: number): Promise<void> {
  const ms = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5), Math.max(0, until - Date.now()));
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export type { AdoptedRow, DetachedRunOptions, DetachedWorkStart } from "./detached-run-options.js";

/**
 * The background half of a detached invocation (detach, abort and the
 * status lifecycle of a background row): writes one
 * `pending` row chained off the latest snapshot, refreshes its heartbeat,
 * cancels the work when a subscriber sees the row flip to `aborted`, and at the
 * end rewrites the same row to `completed` / `failed` / `aborted` with the final
 * state. The finalizer re-checks the stored status, so a late abort wins. At
 * shutdown the row is left pending (it then reads as expired), never falsely
 * completed.
 */
export class DetachedRun<S> implements BackgroundTask {
  /** The pending row's ID, once written. */
  readonly pendingId: Promise<string>;
  readonly done: Promise<void>;
  /** The chunks streamed after detach, kept for clients re-attaching (when the store keeps them). */
  private readonly chunks: DetachedChunks;
  private readonly o: DetachedRunOptions<S>;
  private readonly subscription = new AbortController();
  private resolveDone!: () => void;
  private heartbeat: NodeJS.Timeout | undefined;
  private lastTurnIndex: number;
  private shuttingDown = false;
  private parentPoint: CommittedPoint<S> | undefined;
  private usage: Usage | undefined;
  /** When a write to the row last confirmed that it is still this run's (epoch ms). */
  private confirmedAt = Date.now();
  /** Set once the work was cancelled for an abort of its row (reported once). */
  private abortSeen = false;
  /** Control inputs other instances post on the row. */
  private inbox: ControlInbox<S> | undefined;

  constructor(options: DetachedRunOptions<S>) {
    this.o = options;
    this.lastTurnIndex = options.turnIndex;
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    const start = options.start;
    if (start.kind === "adopt") {
      this.parentPoint = start.parent;
      this.usage = start.usage;
      this.pendingId = Promise.resolve(start.snapshotId);
    } else {
      this.pendingId = this.writePending(start.work, start.request);
    }
    this.chunks = new DetachedChunks(
      options.store,
      this.pendingId.then((snapshotId) => ({
        sessionId: options.sessionId,
        snapshotId,
        run: start.kind === "adopt" ? start.run : 0,
      })),
      options.liveness.chunkRetentionMs,
      options.storeContext,
    );
    this.pendingId.then(
      (id) => {
        if (options.controls)
          this.inbox = new ControlInbox(
            options.controls,
            options.store,
            id,
            (row) => this.holds(row),
            options.storeContext,
          );
        this.startHeartbeat(id);
        void this.watchForAbort(id);
      },
      (err) => {
        this.o.work.abort(AgentError.from(err));
        this.resolveDone();
      },
    );
  }

  /**
   * Records that a turn finished, after its TurnEnd chunk (`sequence`) was
   * recorded: the row gets the state so far, the turn's index and tokens, and
   * one more completed input, so that a takeover resumes after this turn. A
   * row that another run took over stops the work (ABORTED); a store error
   * leaves the row as it was (a takeover then repeats the turn), and so
   * does a state over the session size cap (the final row fails the run
   * with RESOURCE_EXHAUSTED). Never throws.
   */
  async turnCompleted(
    turnIndex: number,
    usage: Usage | undefined,
    state: SessionState<S>,
    sequence: number,
  ): Promise<void> {
    this.lastTurnIndex = turnIndex;
    this.usage = addUsage(this.usage, usage);
    await this.checkpoint(turnIndex, state, sequence, true);
  }

  /**
   * Records a checkpoint inside turn `turnIndex` (after a tool round), the
   * chunks up to `sequence` recorded: the row gets the state so far and is
   * marked in-turn, so that a takeover continues the turn from here. As
   * {@link turnCompleted}, never throws.
   */
  roundCompleted(turnIndex: number, state: SessionState<S>, sequence: number): Promise<void> {
    return this.checkpoint(turnIndex, state, sequence, false);
  }

  private async checkpoint(
    turnIndex: number,
    state: SessionState<S>,
    sequence: number,
    turnDone: boolean,
  ): Promise<void> {
    const id = await this.pendingId.catch(() => undefined);
    if (!id) return;
    let fields: StateFields<S>;
    try {
      fields = stateFieldsFor(this.parentPoint, state, turnIndex, this.o.records);
    } catch {
      return;
    }
    const now = Date.now();
    const written = await this.o.store
      .updateRecord(
        id,
        (existing) => {
          if (existing.status !== "pending" || !this.holds(existing) || !existing.work) return null;
          const { checkpoint: _checkpoint, delta: _delta, ...rest } = existing;
          const { inTurn: _inTurn, ...work } = existing.work;
          return {
            ...rest,
            ...fields,
            turnIndex: turnDone ? Math.max(existing.turnIndex, turnIndex) : existing.turnIndex,
            updatedAt: now,
            heartbeatAt: now,
            ...(this.usage ? { usage: this.usage } : {}),
            work: turnDone
              ? { ...work, completed: work.completed + 1, lastSequence: sequence }
              : { ...work, lastSequence: sequence, inTurn: true },
          };
        },
        this.o.storeContext,
      )
      .catch(() => undefined);
    if (written) {
      this.confirmedAt = Date.now();
      this.inbox?.observe(written);
    } else if (written === null) await this.stopIfEnded(id);
  }

  /** True when `row` is (still) this run's: its last recorded run is this one (rows without work: always). */
  private holds(row: SnapshotRecord<S>): boolean {
    return row.work === undefined || row.work.runs.at(-1)?.invocationId === this.o.invocationId;
  }

  /**
   * After a row write that found the row no longer this run's pending row:
   * reads it and stops the work when it was aborted (the backstop for an
   * abort the status subscription missed: it reaches the worker within one
   * heartbeat) or when its last run is another one (another instance took it
   * over).
   */
  private async stopIfEnded(id: string): Promise<void> {
    const row = await this.o.store.getRecord(id, this.o.storeContext).catch(() => undefined);
    if (row?.status === "aborted") return this.abortObserved(id, "row-write");
    const taken = this.takenOverError(id, row);
    if (taken) this.o.work.abort(taken);
  }

  /** Cancels the work for an abort of its row, and reports it once (the status subscription or a row write may see it). */
  private abortObserved(id: string, via: AbortObservedEvent["via"]): void {
    if (this.abortSeen) return;
    this.abortSeen = true;
    this.o.work.abort(new AgentError("ABORTED", `snapshot "${id}" was aborted`));
    this.o.events?.abortObserved?.({
      agent: this.o.agent,
      sessionId: this.o.sessionId,
      snapshotId: id,
      observedAt: Date.now(),
      via,
    });
  }

  /** ABORTED naming the instance that took `row` over, or undefined while the row is this run's (or gone). */
  private takenOverError(id: string, row: SnapshotRecord<S> | undefined): AgentError | undefined {
    if (!row || this.holds(row)) return undefined;
    const by = row.work?.runs.at(-1);
    return new AgentError(
      "ABORTED",
      `the detached work of snapshot "${id}" was taken over by instance "${by?.instance ?? "?"}"`,
    );
  }

  /** True when the chunks streamed after detach are recorded (the store keeps a chunk log). */
  get recordsChunks(): boolean {
    return this.chunks.recording;
  }

  /**
   * Records a chunk streamed after detach; resolves once it is durable. A
   * store outage (UNAVAILABLE) shorter than the heartbeat lease does not stop
   * the work: the write is retried with backoff (the model waits, the chunks
   * stay in order) until the lease this run last confirmed would lapse, then
   * rejects with the store's UNAVAILABLE. A retried append that finds its
   * chunk stored (its earlier attempt landed) counts as done. Rejects
   * ABORTED when the row turns out to be another run's: after more than
   * half a TTL without a confirmed row write (the process stalled), the row
   * is read first, so a worker that wakes up after a takeover does not
   * append to the new run's stream.
   */
  async recordChunk(chunk: SequencedChunk): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.recordChunkOnce(chunk);
      } catch (err) {
        const error = AgentError.from(err);
        if (attempt > 0 && error.status === "ALREADY_EXISTS") return;
        const leaseEnds = this.confirmedAt + this.o.liveness.heartbeatTtlMs;
        if (error.status !== "UNAVAILABLE" || this.o.work.signal.aborted || Date.now() >= leaseEnds) throw error;
        await outagePause(attempt, leaseEnds);
      }
    }
  }

  private async recordChunkOnce(chunk: SequencedChunk): Promise<void> {
    if (Date.now() - this.confirmedAt > this.o.liveness.heartbeatTtlMs / 2) {
      const id = await this.pendingId;
      const taken = this.takenOverError(id, await this.o.store.getRecord(id, this.o.storeContext));
      if (taken) {
        this.o.work.abort(taken);
        throw taken;
      }
      this.confirmedAt = Date.now();
    }
    return this.chunks.record(chunk);
  }

  cancelForShutdown(): void {
    this.shuttingDown = true;
    this.o.work.abort(new AgentError("UNAVAILABLE", "the server is shutting down"));
  }

  /**
   * Adds the detached turns' tokens to the session, finalizes the row with the
   * invocation's outcome (both skipped at shutdown), then releases the session.
   * Never throws.
   */
  async finish(state: SessionState<S>, error: AgentError | undefined, finishReason: FinishReason): Promise<void> {
    try {
      const id = await this.pendingId.catch(() => undefined);
      this.stopHeartbeat();
      if (!id) return;
      if (this.shuttingDown) {
        this.o.events?.backgroundFinished?.({
          agent: this.o.agent,
          sessionId: this.o.sessionId,
          snapshotId: id,
          status: "pending",
        });
        return;
      }
      // Before the row ends: a client that sees it end may resume at once, so only the release may be left then.
      if (this.usage) await this.o.claim.addUsage(this.usage);
      const { fields, failure } = this.finalFields(state, error);
      const row = await this.o.store.updateRecord(
        id,
        (existing) => this.finalRow(existing, fields, failure, finishReason),
        this.o.storeContext,
      );
      const status = row?.status ?? (await this.o.store.getRecord(id, this.o.storeContext))?.status ?? "pending";
      this.o.events?.backgroundFinished?.({ agent: this.o.agent, sessionId: this.o.sessionId, snapshotId: id, status });
    } catch {
      // The row stays pending and reads as expired once its heartbeat is stale.
    } finally {
      this.stopHeartbeat();
      this.subscription.abort();
      // Cut at shutdown: the lease stays (naming this run) so that another instance finds the session and takes it over.
      if (this.shuttingDown) this.o.claim.abandon();
      else await this.o.claim.release();
      // After the release: a client that saw the row end may resume the session at once.
      if (!this.shuttingDown) await this.chunks.keep(); // kept for the retention period from the end of the work
      this.resolveDone();
    }
  }

  /** The final state's record fields; a state over the size cap keeps the parent's state and fails the run. */
  private finalFields(
    state: SessionState<S>,
    error: AgentError | undefined,
  ): { fields: StateFields<S>; failure: AgentError | undefined } {
    const parent = this.parentPoint;
    try {
      return { fields: stateFieldsFor(parent, state, this.lastTurnIndex, this.o.records), failure: error };
    } catch (err) {
      const base = parent?.state ?? { sessionId: this.o.sessionId, messages: [], artifacts: [] };
      return {
        fields: stateFieldsFor(parent, base, this.lastTurnIndex, this.o.records),
        failure: error ?? AgentError.from(err),
      };
    }
  }

  private finalRow(
    existing: SnapshotRecord<S>,
    fields: StateFields<S>,
    error: AgentError | undefined,
    finishReason: FinishReason,
  ): SnapshotRecord<S> | null {
    if (existing.status !== "pending" && existing.status !== "aborted") return null;
    if (!this.holds(existing)) return null;
    const now = Date.now();
    const base: SnapshotRecord<S> = {
      ...existing,
      ...fields,
      updatedAt: now,
      turnIndex: Math.max(existing.turnIndex, this.lastTurnIndex),
      ...(this.usage ? { usage: this.usage } : {}),
    };
    if (existing.status === "aborted" || error?.status === "ABORTED")
      return { ...base, status: "aborted", finishReason: "aborted" };
    if (error) return { ...base, status: "failed", finishReason: "failed", error: error.toData() };
    return { ...base, status: "completed", finishReason };
  }

  /** Commits the pending row; `request` (the detach input's request ID) goes on it and into the head's committed request IDs. */
  private async writePending(work: DetachedWorkStart, request?: TurnRequest): Promise<string> {
    await this.o.afterTurnSave;
    const now = Date.now();
    const parent = this.o.parent();
    this.parentPoint = parent;
    const createdAt = Math.max(now, (parent?.createdAt ?? 0) + 1);
    const snapshotId = uuidv7();
    const position = parent?.position ?? {
      depth: 0,
      deltaBytes: 0,
      checkpointBytes: 0,
      checkpointTurn: this.o.turnIndex,
    };
    const meta = {
      snapshotId,
      sessionId: this.o.sessionId,
      turnIndex: this.o.turnIndex,
      createdAt,
      heartbeatAt: now,
      status: "pending" as const,
      ...(request ? { requestId: request.requestId, requestFingerprint: request.fingerprint } : {}),
    };
    const edit = this.o.edit?.();
    if (edit) Object.assign(meta, { edit });
    const { instance, ...recorded } = work;
    const run = { invocationId: this.o.invocationId, instance, startedAt: now, fromInput: 0 };
    const record = { ...buildRecord(meta, parent, position), work: { ...recorded, completed: 0, runs: [run] } };
    await this.o.claim.commit(record);
    return snapshotId;
  }

  private startHeartbeat(id: string): void {
    this.heartbeat = setInterval(() => {
      void this.chunks.keep();
      void this.o.store
        .updateRecord(
          id,
          (existing) =>
            existing.status === "pending" && this.holds(existing) ? { ...existing, heartbeatAt: Date.now() } : null,
          this.o.storeContext,
        )
        .then(
          (row) => {
            if (!row) return void this.stopIfEnded(id);
            this.confirmedAt = Date.now();
            this.inbox?.observe(row);
          },
          () => {},
        );
    }, this.o.liveness.heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  private async watchForAbort(id: string): Promise<void> {
    try {
      for await (const status of this.o.store.subscribeStatus(id, this.subscription.signal, this.o.storeContext)) {
        if (status === "aborted") return this.abortObserved(id, "status");
        if (status !== "pending") return;
      }
    } catch {
      // Subscription ended (store closed); the finalizer still re-checks the row.
    }
  }
}
