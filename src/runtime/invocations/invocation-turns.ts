import { uuidv7 } from "../../../stores/uuid-v7.js";
import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, AgentStreamChunk, TurnEnd } from "../../types/agent-io.js";
import type { Message } from "../../types/content.js";
import type { SessionState } from "../../types/session-state.js";
import type { FinishReason } from "../../types/snapshot.js";
import type { SnapshotRecord } from "../../../stores/snapshot-store.js";
import { addUsage, type Usage } from "../../types/usage.js";
import type { TurnContext } from "../agents/agent-function.js";
import type { DetachedRun } from "../background/detached-run.js";
import type { InputProgress } from "./input-progress.js";
import type { InvocationOptions, InvocationTarget } from "./invocation-options.js";
import type { InvocationStream } from "./invocation-stream.js";
import type { InvocationTelemetry } from "./invocation-telemetry.js";
import { committedRequest, inputFingerprint } from "../sessions/request-ledger.js";
import type { TurnEvent } from "./runtime-events.js";
import type { SessionClaim } from "../sessions/session-claim.js";
import type { SessionRunner } from "../sessions/session-runner.js";
import type { SessionMark } from "../sessions/session-mark.js";
import type { TurnCommits } from "../sessions/turn-commits.js";
import type { TurnControl } from "./turn-control.js";
import { turnRequestOf, type TurnRequest } from "../sessions/turn-request.js";
import { loadRecordState } from "../sessions/session-lookup.js";
import { turnToolJournal, type StoreTurnToolJournal } from "../sessions/turn-tool-journal.js";

/** The parts of an invocation its turn bookkeeping works with (see {@link InvocationTurns}). */
export interface InvocationTurnsParts<S> {
  readonly target: InvocationTarget<S>;
  readonly options: InvocationOptions;
  readonly sessionId: string;
  /** The chunks out: to the client, or after detach to the store's chunk log. */
  readonly out: InvocationStream;
  readonly claim: SessionClaim<S> | undefined;
  readonly commits: TurnCommits<S> | undefined;
  /** The invocation's work: aborted by a cancel, an interrupt, or a lost claim. */
  readonly work: AbortController;
  readonly runner: SessionRunner<S>;
  readonly telemetry: InvocationTelemetry;
  readonly progress: InputProgress;
  /** Cancel and steer inputs of the running turn. */
  readonly control: TurnControl;
  /** The detached run, once the invocation detached. */
  detachedRun(): DetachedRun<S> | undefined;
  /** Ends the invocation with an RPC-level error (a request ID reused for a different input). */
  failClosed(err: AgentError): void;
  /** The invocation's init patches (a fork from an edited past): part of every input's request fingerprint. */
  readonly edit?: object;
}

/**
 * The per-turn bookkeeping of one invocation (the hooks of its turn loop):
 * a turn's identity before it runs; at a successful end, the commit of its
 * snapshot (before detach) and its TurnEnd; at a failure, the rollback to the
 * last good state and a failed TurnEnd, nothing written; and the exactly-once
 * answer to a retried input whose turn the session already committed (its
 * TurnEnd streamed again, the agent not run).
 */
export class InvocationTurns<S> {
  private readonly parts: InvocationTurnsParts<S>;
  /** The state after the last successful turn, kept without a copy of the history. */
  private good: SessionMark<S>;
  private finish: FinishReason = "stop";
  private save: Promise<unknown> = Promise.resolve();
  /** Settles once the running turn's commit, if one is under way, landed and its TurnEnd was queued, or failed. */
  private ending: Promise<void> = Promise.resolve();
  private turnStartedAt = 0;
  /** The request ID and fingerprint of the running turn's input, if it carried a request ID. */
  private turnRequest: TurnRequest | undefined;
  /** The running turn's tool-call journal in the store (see `TurnContext.toolJournal`). */
  private toolJournal: StoreTurnToolJournal | undefined;
  /** The tokens of the committed turns answered again (retries). */
  private replayedUsage: Usage | undefined;
  /** The record of the last turn answered again, while no later turn committed. */
  private replayed: SnapshotRecord<S> | undefined;
  /** Takeover of a turn cut after a checkpoint: the next turn continues it (`TurnContext.continued`). */
  continuing = false;

  constructor(parts: InvocationTurnsParts<S>) {
    this.parts = parts;
    this.good = parts.runner.mark();
  }

  /** The state after the last successful turn (what a failure rolls back to). */
  get lastGood(): SessionState<S> {
    return this.good.state();
  }

  /** The finish reason of the last turn that ended well or was answered again ("stop" before any). */
  get lastFinish(): FinishReason {
    return this.finish;
  }

  /** The last turn commit started; settles (never rejects) once it is written or failed. */
  get turnSave(): Promise<unknown> {
    return this.save;
  }

  /**
   * Settles once a turn commit under way when this is read has landed and
   * its TurnEnd is queued (or the commit failed); at once when none is.
   * Never rejects. What a lost claim waits for, so that a turn whose commit
   * landed is answered as committed.
   */
  get turnEnding(): Promise<void> {
    return this.ending;
  }

  /** The tokens of the committed turns this invocation answered again, if any. */
  get answeredUsage(): Usage | undefined {
    return this.replayedUsage;
  }

  /**
   * The snapshot of the last turn this invocation answered again (a retry of
   * a committed input), unless a turn committed after it: the output's, so a
   * retried Run answers what its first attempt did, also when the session
   * moved on since.
   */
  get answeredSnapshotId(): string | undefined {
    return this.replayed?.snapshotId;
  }

  /** The state of the turn {@link answeredSnapshotId} names (one chain read), or undefined. */
  async answeredState(): Promise<SessionState<S> | undefined> {
    const record = this.replayed;
    const store = this.parts.target.store;
    if (!record || !store) return undefined;
    const state = await loadRecordState(store, record, this.parts.options.storeContext);
    return state && { ...state, sessionId: record.sessionId };
  }

  /** Reserves the turn's identity (snapshot ID before detach, parent, index) and starts its span. */
  beginTurn(turnIndex: number, input: AgentInput): TurnContext {
    const { out, claim, target, work } = this.parts;
    out.startTurn();
    this.turnRequest = input.requestId ? turnRequestOf(input, this.parts.edit) : undefined;
    if (claim) claim.runningRequestId = this.turnRequest?.requestId;
    const snapshotId = target.store && !this.parts.detachedRun() ? uuidv7() : undefined;
    this.turnStartedAt = Date.now();
    const parentId = this.parts.commits?.last?.snapshotId;
    // Built by assignment, not by spreading optional parts: this runs every turn.
    const turn = {} as TurnContext;
    if (snapshotId) turn.snapshotId = snapshotId;
    if (parentId) turn.parentId = parentId;
    turn.turnIndex = turnIndex;
    turn.signal = this.parts.control.begin(turnIndex, work.signal);
    turn.takeSteering = () => this.takeSteering();
    turn.checkpoint = () => this.checkpointTurn(turnIndex);
    this.toolJournal =
      this.turnRequest && snapshotId
        ? turnToolJournal(target.store, this.parts.sessionId, this.turnRequest, this.parts.options.storeContext)
        : undefined;
    if (this.toolJournal) turn.toolJournal = this.toolJournal;
    if (this.continuing) turn.continued = true;
    this.continuing = false;
    this.parts.telemetry.beginTurn(turn);
    return turn;
  }

  /**
   * Ends a successful turn: once its chunks drained, commits its snapshot
   * (before detach; throws if the work was aborted meanwhile, committing
   * nothing), then streams its TurnEnd and, after detach, records it on the
   * background row.
   */
  async endTurn(turn: TurnContext, finishReason: FinishReason): Promise<void> {
    const { out, work, claim, runner, telemetry, progress } = this.parts;
    await out.drained();
    // Checked after the wait: a cancel (or a chunk transform failing) while this turn's chunks drained commits nothing.
    if (work.signal.aborted) throw AgentError.from(work.signal.reason, "CANCELLED");
    if (turn.signal.aborted) throw AgentError.from(turn.signal.reason, "ABORTED");
    // From here the turn commits: a cancel finds nothing to cancel, an untaken steer runs next.
    this.parts.control.seal();
    let snapshotId: string | undefined;
    const usage = telemetry.turnUsage;
    // The turn is committed before detach, on a store; a lost claim waits for the commit (see turnEnding).
    const commits = turn.snapshotId && !this.parts.detachedRun() ? this.parts.commits : undefined;
    let ended = (): void => {};
    if (commits) this.ending = new Promise((resolve) => (ended = resolve));
    let sent: Promise<void> | undefined;
    try {
      const mark = runner.mark();
      if (commits) {
        progress.committed();
        const save = commits.commit(
          turn.snapshotId!,
          turn.turnIndex,
          finishReason,
          mark,
          runner.unchangedMessages(),
          usage,
          this.turnRequest,
        );
        this.save = save.catch(() => {});
        await save;
        // Committed: a retry is answered from the commit, so the turn's tool-call journal can go (else it expires).
        if (this.toolJournal?.used) await this.toolJournal.drop().catch(() => {});
        if (claim) claim.runningRequestId = undefined;
        runner.markUnchanged();
        snapshotId = turn.snapshotId;
        this.replayed = undefined;
      }
      this.good = mark;
      this.finish = finishReason;
      this.logTurn(turn, finishReason, snapshotId);
      telemetry.endTurn(finishReason, snapshotId);
      sent = this.emit({ turnEnd: turnEndOf(snapshotId, finishReason, turn.turnIndex, this.parts.sessionId, usage) });
      progress.answered();
    } finally {
      ended();
    }
    await sent;
    progress.turnEnded(out.sequence);
    // After its TurnEnd is recorded: a takeover resumes after this turn.
    const detached = this.parts.detachedRun();
    if (detached) await detached.turnCompleted(turn.turnIndex, usage, this.good.state(), out.sequence);
  }

  /** Ends a failed turn: rolls the session back to the last good state and streams a failed (or aborted) TurnEnd. */
  async failTurn(turn: TurnContext, error: unknown): Promise<void> {
    const { claim, telemetry, runner, out, control } = this.parts;
    control.seal();
    if (claim) claim.runningRequestId = undefined;
    const finishReason = this.stoppedByAbort() || this.cancelled() ? "aborted" : "failed";
    this.logTurn(turn, finishReason, undefined);
    const usage = telemetry.turnUsage; // spent even though nothing is written
    telemetry.failTurn(error, finishReason);
    runner.restore(this.good.state());
    await out.drained();
    await this.emit({ turnEnd: turnEndOf(undefined, finishReason, turn.turnIndex, this.parts.sessionId, usage) });
  }

  /**
   * A retry of a turn the session committed (its request ID is among the
   * head's committed request IDs): streams that turn's TurnEnd again, read
   * from its record (same snapshot ID, turn index, finish reason and usage),
   * and the input is skipped: the agent does not run. The same request ID
   * with a different input ends the invocation with INVALID_ARGUMENT. False
   * (run the input) when the session does not remember the ID, or its
   * record is gone. Costs a scan of the head's bounded list, plus one record
   * read on a hit.
   */
  async answered(input: AgentInput): Promise<boolean> {
    const { claim, sessionId, out } = this.parts;
    const store = this.parts.target.store;
    if (!claim || !store || this.parts.detachedRun()) return false;
    const requestId = input.requestId!;
    const entry = committedRequest(claim.currentHead, requestId, claim.requestWindow);
    if (!entry) return false;
    const record = await store.getRecord(entry.snapshotId, this.parts.options.storeContext);
    if (!record || record.sessionId !== sessionId) return false;
    if (record.requestFingerprint !== inputFingerprint(input, this.parts.edit)) {
      this.parts.failClosed(
        new AgentError(
          "INVALID_ARGUMENT",
          `input.request_id "${requestId}" was already used for a different input of session "${sessionId}" (turn ${record.turnIndex}, snapshot "${record.snapshotId}"); give every new input a new request ID and reuse one only to retry the same input`,
          { details: { field: "input.request_id", requestId, snapshotId: record.snapshotId } },
        ),
      );
      return true;
    }
    await out.drained();
    const finishReason = record.finishReason ?? "stop";
    this.finish = finishReason;
    this.replayedUsage = addUsage(this.replayedUsage, record.usage);
    this.replayed = record;
    const sent = this.emit({
      turnEnd: turnEndOf(record.snapshotId, finishReason, record.turnIndex, sessionId, record.usage),
    });
    this.parts.progress.answered();
    await sent;
    this.parts.progress.turnEnded(out.sequence);
    return true;
  }

  /**
   * Whether the turn that just failed was stopped by a cancel input (and the
   * invocation's work goes on): the turn loop then takes the next input.
   */
  cancelled(): boolean {
    return this.parts.control.sealedByCancel && !this.parts.work.signal.aborted;
  }

  /** The running turn takes the steer inputs sent to it: their messages join the history (user messages), oldest first. */
  private takeSteering(): Message[] {
    const messages = this.parts.control.take();
    for (const message of messages) this.parts.runner.addMessages(message);
    return messages;
  }

  /** After detach: checkpoints the row mid-turn, once the chunks streamed so far are recorded. */
  private async checkpointTurn(turnIndex: number): Promise<void> {
    const run = this.parts.detachedRun();
    if (!run) return;
    const { out, work, runner } = this.parts;
    await out.drained();
    if (work.signal.aborted) return;
    await run.roundCompleted(turnIndex, runner.snapshotState(), out.sequence);
  }

  private logTurn(turn: TurnContext, finishReason: FinishReason, snapshotId: string | undefined): void {
    const report = this.parts.target.events?.turn;
    if (!report) return;
    const event = { agent: this.parts.target.name, sessionId: this.parts.sessionId } as TurnEvent;
    if (snapshotId) event.snapshotId = snapshotId;
    event.turnIndex = turn.turnIndex;
    event.finishReason = finishReason;
    event.detached = this.parts.detachedRun() !== undefined;
    event.durationMs = Date.now() - this.turnStartedAt;
    report(event);
  }

  /** True once the work was stopped with ABORTED (an Abort of detached work, or a busy-session INTERRUPT). */
  private stoppedByAbort(): boolean {
    const signal = this.parts.work.signal;
    return signal.aborted && AgentError.from(signal.reason, "CANCELLED").status === "ABORTED";
  }

  private emit(chunk: AgentStreamChunk): Promise<void> | undefined {
    return this.parts.out.emit(chunk);
  }
}

/** A TurnEnd chunk's body (optional fields set only when present). */
function turnEndOf(
  snapshotId: string | undefined,
  finishReason: FinishReason,
  turnIndex: number,
  sessionId: string,
  usage: Usage | undefined,
): TurnEnd {
  const turnEnd = {} as TurnEnd;
  if (snapshotId) turnEnd.snapshotId = snapshotId;
  turnEnd.finishReason = finishReason;
  turnEnd.turnIndex = turnIndex;
  turnEnd.sessionId = sessionId;
  if (usage) turnEnd.usage = usage;
  return turnEnd;
}
