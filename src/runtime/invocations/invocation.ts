import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, AgentOutput, AgentStreamChunk, InputAck } from "../../types/agent-io.js";
import { admitInput } from "./input-admission.js";
import { userText } from "../../types/content.js";
import type { SessionState } from "../../types/session-state.js";
import type { SessionStore, SnapshotSubscriber } from "../../../stores/snapshot-store.js";
import { backgroundStoreOf } from "../background/background-store.js";
import type { AgentConnection } from "../agents/agent-connection.js";
import type { AgentResult, Responder } from "../agents/agent-function.js";
import { AsyncChannel } from "../../streams/async-channel.js";
import { DetachedRun } from "../background/detached-run.js";
import type { ResolvedStart } from "../sessions/init-resolver.js";
import type { SessionClaim } from "../sessions/session-claim.js";
import { TurnCommits } from "../sessions/turn-commits.js";
import { SessionRunner, type TurnLifecycle } from "../sessions/session-runner.js";
import { PROCESS_TURN_SLICES } from "../sessions/turn-slices.js";
import { ANONYMOUS } from "../../types/principal.js";
import { applyStateTransform, transformContextOf, type TransformContext } from "../agents/state-transform.js";
import { InvocationTelemetry } from "./invocation-telemetry.js";
import { invocationOutput } from "./invocation-output.js";
import { detachStart } from "./detach-start.js";
import type { InvocationOptions, InvocationTarget } from "./invocation-options.js";
import type { AdoptedWork } from "../background/adopted-work.js";
import { InputProgress } from "./input-progress.js";
import { InvocationStream } from "./invocation-stream.js";
import { InvocationTurns } from "./invocation-turns.js";
import { TurnControl } from "./turn-control.js";
import { turnRequestOf, type TurnRequest } from "../sessions/turn-request.js";
import { snapshotEditOf } from "../sessions/init-edit.js";
import { DEFAULT_INPUT_LIMITS } from "../sessions/input-limits.js";

export type { InvocationOptions, InvocationTarget } from "./invocation-options.js";

/**
 * The engine of one invocation: feeds inputs to the agent's turn loop, writes a
 * snapshot at each successful turn end, streams client-facing chunks (chunk
 * transform applied, custom-state patches diffed on the transformed state), and
 * resolves the output. Detach hands the rest to a {@link DetachedRun}.
 */
export class Invocation<S> implements AgentConnection<S> {
  readonly sessionId: string;
  private readonly target: InvocationTarget<S>;
  private readonly options: InvocationOptions;
  private readonly turnInputs = new AsyncChannel<AgentInput>();
  private readonly work = new AbortController();
  private readonly runner: SessionRunner<S>;
  /** The chunks out: to the client, or after detach to the store's chunk log. */
  private readonly out: InvocationStream;
  private readonly outputPromise: Promise<AgentOutput<S>>;
  private resolveOutput!: (output: AgentOutput<S>) => void;
  private rejectOutput!: (err: AgentError) => void;
  private readonly claim: SessionClaim<S> | undefined;
  private readonly commits: TurnCommits<S> | undefined;
  private inputClosed = false;
  private settled = false;
  /** The RPC-level error the invocation ended with, if it failed closed. */
  private failure: AgentError | undefined;
  private detachedRun: DetachedRun<S> | undefined;
  /** Which input runs and where the stream stands: what detach records for a takeover. */
  private readonly progress: InputProgress;
  /** The state the invocation started from (recorded with detached work of a session without a commit). */
  private readonly initialState: SessionState<S>;
  /** Whether this invocation started a new session (no resume point). */
  private readonly startsSession: boolean;
  /** Turn spans, turn metrics and token usage (OpenTelemetry API; no-ops without an SDK). */
  private readonly telemetry: InvocationTelemetry;
  /** Begin, end, failure and exactly-once replay of each turn; the last good state and finish reason. */
  private readonly turns: InvocationTurns<S>;
  /** The init patches the invocation started with (part of every input's request fingerprint). */
  private readonly edit: object | undefined;
  /** Cancel and steer inputs, handled as they arrive. */
  private readonly control: TurnControl;

  /** `adopted`: a takeover; the invocation runs the remaining work of a dead instance's pending row. */
  constructor(
    target: InvocationTarget<S>,
    start: ResolvedStart<S>,
    options: InvocationOptions = {},
    adopted?: AdoptedWork<S>,
  ) {
    this.target = target;
    this.options = options;
    this.sessionId = start.state.sessionId;
    this.telemetry = new InvocationTelemetry(target.name, this.sessionId, target.telemetry === true);
    this.startsSession = start.parent === undefined;
    this.claim = start.claim;
    const principal = options.principal ?? ANONYMOUS;
    const tenant = principal.tenant;
    const edit = start.edit ? snapshotEditOf(start.edit, principal) : undefined;
    this.edit = start.edit;
    this.commits = start.claim
      ? new TurnCommits(start.claim, this.sessionId, target.records, start.parent, edit)
      : undefined;
    this.out = new InvocationStream(
      {
        transform: target.transforms.chunk,
        transformContext: () => this.transformContext(),
        detachedRun: () => this.detachedRun as DetachedRun<unknown> | undefined,
        onFailure: (err) => this.streamFailed(err),
        maxBufferedChunks: target.maxBufferedChunks,
      },
      start.state.custom,
    );
    this.outputPromise = new Promise((resolve, reject) => {
      this.resolveOutput = resolve;
      this.rejectOutput = reject;
    });
    this.outputPromise.catch(() => {}); // observed through output()
    this.progress = new InputProgress(start.nextTurnIndex);
    const inputs = target.inputs ?? DEFAULT_INPUT_LIMITS;
    this.control = new TurnControl(
      (chunk) => void this.emit(chunk),
      {
        maxQueued: target.maxQueuedInputs,
        maxSteersPerTurn: inputs.maxSteersPerTurn,
        maxWaitingInputBytes: inputs.maxWaitingInputBytes,
      },
      this.turnInputs,
      target.tenantInputs?.hold(tenant),
    );
    this.initialState = start.state;
    const turnLine = (target.turnSlices ?? PROCESS_TURN_SLICES).line(tenant);
    this.runner = new SessionRunner(start.state, target.stateSchema, start.nextTurnIndex, this.lifecycle(), turnLine);
    this.turns = new InvocationTurns({
      target,
      options,
      sessionId: this.sessionId,
      out: this.out,
      claim: this.claim,
      commits: this.commits,
      work: this.work,
      runner: this.runner,
      telemetry: this.telemetry,
      progress: this.progress,
      control: this.control,
      detachedRun: () => this.detachedRun,
      failClosed: (err) => this.failClosed(err),
      ...(start.edit ? { edit: start.edit } : {}),
    });
    this.runner.onCustomChange(() => this.streamCustom());
    this.claim?.whenLost((err) => this.claimLost(err));
    options.signal?.addEventListener("abort", this.onClientAbort, { once: true });
    if (options.signal?.aborted) this.clientGone();
    if (adopted) this.adopt(adopted);
    void this.execute();
  }

  get stream(): AsyncIterable<AgentStreamChunk> {
    return this.out.chunks;
  }

  get custom(): S | undefined {
    return structuredClone(this.out.custom) as S | undefined;
  }

  send(input: AgentInput): void {
    if (this.failure) throw this.failure;
    if (this.inputClosed) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        this.settled ? "the invocation has completed; read its output" : "input is closed",
      );
    }
    const admitted = admitInput(input, { queued: this.turnInputs.size, maxQueued: this.target.maxQueuedInputs });
    if (admitted.control) {
      this.control.apply(admitted.control, admitted.turn, input.requestId, this.turnInputs);
      return;
    }
    // Checked before queuing: a detach the store cannot support queues nothing.
    const backgroundStore = admitted.detach
      ? backgroundStoreOf(this.target.name, this.target.store, "detach")
      : undefined;
    if (admitted.turn) {
      this.control.admitWaiting(admitted.turn, this.turnInputs);
      this.turnInputs.push(admitted.turn);
      this.control.settle();
    }
    if (backgroundStore)
      this.startDetach(backgroundStore, undefined, input.requestId ? turnRequestOf(input, this.edit) : undefined);
  }

  /**
   * A control input (cancel, or steer with a message), handled as it arrives,
   * also after detach (`SendInvocationInput`): answered by an InputAck chunk
   * in the stream (or, after detach, the chunk log). Throws INVALID_ARGUMENT
   * for a malformed one, RESOURCE_EXHAUSTED when a steer would queue past the
   * input limit, FAILED_PRECONDITION when the invocation has ended (or a steer
   * finds no turn running and no more input to come).
   */
  sendControl(input: AgentInput): InputAck {
    if (this.failure) throw this.failure;
    if (this.settled && !this.detachedRun)
      throw new AgentError("FAILED_PRECONDITION", "the invocation has completed; read its output");
    const admitted = admitInput(input, { queued: this.turnInputs.size, maxQueued: this.target.maxQueuedInputs });
    if (!admitted.control) throw new AgentError("INVALID_ARGUMENT", "set input.cancel, or input.steer with a message");
    return this.control.apply(admitted.control, admitted.turn, input.requestId, this.turnInputs);
  }

  sendText(text: string, metadata?: Record<string, unknown>): void {
    this.send({ message: userText(text, metadata) });
  }

  detach(): void {
    this.send({ detach: true });
  }

  close(): void {
    this.inputClosed = true;
    this.turnInputs.close();
  }

  cancel(error: AgentError): void {
    this.failClosed(error);
  }

  output(): Promise<AgentOutput<S>> {
    this.close();
    return this.outputPromise;
  }

  private lifecycle(): TurnLifecycle {
    return {
      inputs: this.progress.pulled(this.control.inputs(this.turnInputs), () => this.runner.turnIndex),
      beginTurn: (turnIndex, input) => this.turns.beginTurn(turnIndex, input),
      answered: async (input) => {
        const answered = await this.turns.answered(input);
        if (answered) this.control.skipped();
        return answered;
      },
      endTurn: (turn, finishReason) => this.turns.endTurn(turn, finishReason),
      failTurn: (turn, error) => this.turns.failTurn(turn, error),
      cancelled: () => this.turns.cancelled(),
      runInTurn: (_turn, work) => this.telemetry.runInTurn(work),
    };
  }

  private responder(): Responder {
    return {
      sendModelChunk: (chunk) => this.emit({ modelChunk: chunk }),
      sendArtifact: (artifact) => {
        this.runner.addArtifacts(artifact);
        return this.emit({ artifact: structuredClone(artifact) });
      },
    };
  }

  private transformContext(): TransformContext {
    return transformContextOf(this.target.name, this.options);
  }

  /** Queues a chunk for the client (or, after detach, the chunk log); see {@link InvocationStream}. */
  private emit(chunk: AgentStreamChunk): Promise<void> | undefined {
    return this.out.emit(chunk);
  }

  /** A chunk that could not be shaped or delivered: cancels detached work, else ends the invocation with the error. */
  private streamFailed(err: AgentError): void {
    if (this.detachedRun) this.work.abort(err);
    else this.failClosed(err);
  }

  private async streamCustom(): Promise<void> {
    if (!this.out.flowing) return;
    try {
      // Without a state transform only custom state is diffed (no copy of the history);
      // a transform gets its own deep copy of the whole state (applyStateTransform).
      const transform = this.target.transforms.state;
      const custom = transform
        ? (await applyStateTransform(transform, this.runner.snapshotState(), this.transformContext()))?.custom
        : this.runner.frozenCustom();
      await this.out.streamCustom(custom);
    } catch (err) {
      this.failClosed(AgentError.from(err));
    }
  }

  /**
   * Takeover: runs the remaining inputs of a dead instance's detached work as
   * this invocation's detached run, numbering chunks after the recorded ones,
   * the first being the {@link Takeover} marker.
   */
  private adopt(adopted: AdoptedWork<S>): void {
    this.out.continueAfter(adopted.lastRecordedSequence);
    this.turns.continuing = adopted.continuesTurn;
    for (const input of adopted.inputs) this.turnInputs.push(input);
    this.control.settle();
    this.startDetach(backgroundStoreOf(this.target.name, this.target.store, "detach"), adopted);
    void this.emit({ takeover: { supersededAfter: adopted.supersededAfter, turnIndex: this.runner.turnIndex } });
  }

  /** `request`: the detach input's request ID and fingerprint, recorded on the pending row (a retry answers that row). */
  private startDetach(
    store: SessionStore<S> & SnapshotSubscriber,
    adopted?: AdoptedWork<S>,
    request?: TurnRequest,
  ): void {
    this.close();
    this.telemetry.detach();
    const start = detachStart({
      ...(adopted ? { adopted } : {}),
      ...(request ? { request } : {}),
      commits: this.commits,
      initialState: this.initialState,
      queued: () => [...this.control.queuedSteers, ...this.turnInputs.queued()],
      progress: this.progress,
      principal: this.options.principal ?? ANONYMOUS,
      instance: this.target.instance,
    });
    // The background row's writes and heartbeats belong to the detached span.
    this.detachedRun = this.telemetry.runInInvocation(
      () =>
        new DetachedRun({
          store,
          sessionId: this.sessionId,
          turnIndex: this.runner.turnIndex,
          invocationId: this.claim!.invocationId,
          start,
          liveness: this.target.liveness,
          storeContext: this.options.storeContext,
          afterTurnSave: this.turns.turnSave,
          claim: this.claim!,
          parent: () => this.commits?.last,
          edit: () => this.commits?.pendingEdit,
          records: this.target.records,
          work: this.work,
          agent: this.target.name,
          controls: (input) => this.sendControl(input),
          ...(this.target.events ? { events: this.target.events } : {}),
        }),
    );
    this.target.background.track(this.detachedRun);
    const run = this.detachedRun;
    this.detachedRun.pendingId.then(
      (snapshotId) => {
        this.target.background.controls.register(snapshotId, (input) => this.sendControl(input), run.done);
        const usage = this.telemetry.usage;
        this.settle({
          sessionId: this.sessionId,
          snapshotId,
          artifacts: [],
          finishReason: "detached",
          ...(usage ? { usage } : {}),
        });
      },
      (err) => this.failClosed(AgentError.from(err)),
    );
  }

  /**
   * The session was taken from this invocation (an INTERRUPT, or its lease
   * went to another instance): detached work is cancelled; an attached
   * invocation ends with `err`, unless nothing was cut — its input is closed
   * and every input's turn committed (a commit under way when the session
   * was taken is waited for: one that landed is the caller's turn, and its
   * TurnEnd is streamed before the error).
   */
  private claimLost(err: AgentError): void {
    if (this.detachedRun) {
      this.work.abort(err);
      return;
    }
    void this.turns.turnEnding.then(() => {
      const nothingCut = this.inputClosed && this.turnInputs.size === 0 && this.progress.allAnswered;
      if (!nothingCut) this.failClosed(err);
    });
  }

  /** The client's signal listener; removed once the invocation settled, so the call's signal holds nothing of it. */
  private readonly onClientAbort = (): void => this.clientGone();

  private clientGone(): void {
    if (this.detachedRun || this.settled) return;
    this.failClosed(new AgentError("CANCELLED", "the client cancelled the invocation")); // also aborts the work
  }

  /** Ends the client-facing side with an RPC-level error and cancels the work (before detach). */
  private failClosed(err: AgentError): void {
    if (this.settled) return;
    this.settled = true;
    this.options.signal?.removeEventListener("abort", this.onClientAbort);
    this.failure = err;
    this.close();
    if (!this.detachedRun) {
      this.work.abort(err);
      // The work is cancelled: what waits on it never runs.
      this.control.releaseHold();
    }
    this.out.fail(err);
    this.rejectOutput(err);
  }

  private settle(output: AgentOutput<S>): void {
    if (this.settled) return;
    this.settled = true;
    this.options.signal?.removeEventListener("abort", this.onClientAbort);
    this.resolveOutput(output);
    this.out.close();
  }

  private async execute(): Promise<void> {
    let result: AgentResult | void = undefined;
    let error: AgentError | undefined;
    try {
      result = await this.target.fn({
        session: this.runner,
        responder: this.responder(),
        signal: this.work.signal,
        model: (model) => this.telemetry.model(model, this.target.models),
        principal: this.options.principal ?? ANONYMOUS,
      });
      await this.runner.flushCustomEvents();
      await this.out.drained();
    } catch (err) {
      error = AgentError.from(err);
    }
    this.close();
    // The work is over: whatever still waits on it is dropped, and frees its tenant's budget.
    this.control.releaseHold();
    const detachedRun = this.detachedRun;
    if (detachedRun) {
      const state = error ? this.turns.lastGood : this.runner.snapshotState();
      await this.telemetry.runInInvocation(() =>
        detachedRun.finish(state, error, result?.finishReason ?? this.turns.lastFinish),
      );
      this.telemetry.finish(error, await detachedRun.pendingId.catch(() => undefined));
      return;
    }
    let output: AgentOutput<S> | undefined;
    let outputError: AgentError | undefined;
    if (!this.settled) {
      try {
        output = await invocationOutput(
          {
            serverManaged: this.target.store !== undefined,
            startsSession: this.startsSession,
            commits: this.commits,
            turns: this.turns,
            runner: this.runner,
            stateTransform: this.target.transforms.state,
            transformContext: this.transformContext(),
            sessionId: this.sessionId,
            usage: this.telemetry.usage,
          },
          result,
          error,
        );
      } catch (err) {
        outputError = AgentError.from(err);
      }
    }
    // Free the session before answering, so the caller's next call finds it free.
    await this.claim?.release();
    if (outputError) this.failClosed(outputError);
    else if (output) this.settle(output);
    this.telemetry.finish();
  }
}
