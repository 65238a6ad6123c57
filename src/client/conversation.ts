import { Code, ConnectError, type CallOptions, type Client } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ChatPosition } from "./chat-position.js";
import { encodeInput, normalizeInput, type ConversationInput } from "./conversation-input.js";
import type { AgentService, ChatRequestSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { AsyncChannel } from "../streams/async-channel.js";
import { applyCustomPatch } from "../streams/custom-patch-stream.js";
import { agentInitToWire, agentOutputFromWire, streamChunkFromWire } from "../protocol/index.js";
import type { AgentInput, AgentOutput, AgentStreamChunk, InputAck } from "../types/agent-io.js";
import type { AgentInit, SessionState } from "../types/session-state.js";
import { chatError, clientError, toClientError } from "./client-errors.js";
import { Retrier, type RetryBudget } from "./retrier.js";
import { INCOMPLETE_STREAM } from "./retryable-error.js";
import { Turn } from "./turn.js";
import { OutstandingInputs } from "./outstanding-inputs.js";

type ChatRequestInit = MessageInitShape<typeof ChatRequestSchema>;

/** What became of a steer: `ack.result` is `steered` (the running turn took it) or `queued` (it runs as `turn`). */
export interface SteerResult {
  ack: InputAck;
  /** The turn the steer runs as, when it was queued. */
  turn?: Turn;
}

/**
 * A live multi-turn Chat with one agent (one bidi `AgentService.Chat` call),
 * created by `client.chat(agent, source)`.
 *
 * - `send()` queues an input and returns its {@link Turn} at once; several
 *   sends may be queued before any is read. Turns end in order.
 * - `turn.cancel()` stops the running turn and keeps the conversation;
 *   `steer()` adds a message to the running turn (or runs it next).
 * - `custom` is the live custom state: every custom-state patch the server
 *   streams is applied as it arrives (the first patch of each turn replaces the
 *   whole document), so after `await turn` it equals the turn-end snapshot's
 *   custom state.
 * - `sessionId` / `snapshotId` follow the TurnEnds and the output, so a new
 *   conversation can resume from them.
 * - `output()` half-closes (no more input), waits for the remaining turns, and
 *   resolves with the final output; `detach()` hands the remaining work to the
 *   server and resolves with the output (`finishReason: "detached"`, pending
 *   `snapshotId`); `close()` cancels the call.
 *
 * Reconnects (unless the client was created with `retry: false`): when the
 * call fails retryably (a reset connection, UNAVAILABLE, a stream cut before
 * its output), a new Chat resumes the session by `sessionId` once known (else
 * re-sends the original source) and re-sends, in order and with their request
 * IDs, the inputs whose TurnEnd had not arrived; the server runs each request
 * ID once. Chunks already delivered are not delivered again, and each turn
 * ends once. A client-managed conversation (`{ state }`) reconnects only
 * before its first TurnEnd (its state then lives only in the broken call).
 *
 * Every rejection is a `ConnectError` (see `err.code`). In-band failures do not
 * reject: a failed turn resolves with `finishReason: "failed"`, the invocation
 * ends there (turns queued behind it reject with `Code.Aborted`), and the
 * output carries `error`.
 */
export class Conversation<S = unknown> {
  /** The agent this conversation talks to. */
  readonly agent: string;
  private requests = new AsyncChannel<ChatRequestInit>();
  /** The inputs whose TurnEnd (or ack) has not arrived. */
  private readonly outstanding = new OutstandingInputs();
  private readonly controller = new AbortController();
  private readonly source: AgentInit<S>;
  /** Whether the current attempt delivered anything (a reopened Chat refused ABORTED before that met its own old invocation). */
  private progressed = false;
  /** Where the Chat stands: the chunks delivered, the turns ended, the session and snapshot IDs. */
  private readonly position: ChatPosition;
  private readonly outputPromise: Promise<AgentOutput<S>>;
  private resolveOutput!: (output: AgentOutput<S>) => void;
  private rejectOutput!: (err: ConnectError) => void;
  private liveCustom: S | undefined;
  private finalState: SessionState<S> | undefined;
  private inputClosed = false;
  private settled = false;
  private failure: ConnectError | undefined;
  /** Removes the listener on the caller's `options.signal` (it must not outlive the call). */
  private releaseOuterSignal: (() => void) | undefined;

  /** Opens the Chat call. Use `client.chat()` rather than constructing this directly. */
  constructor(
    private readonly client: Client<typeof AgentService>,
    agent: string,
    source: AgentInit<S> = {},
    options: CallOptions = {},
    retrier: Retrier = new Retrier(),
  ) {
    this.agent = agent;
    this.source = source;
    this.position = new ChatPosition(source);
    this.liveCustom = source.state?.custom;
    this.outputPromise = new Promise<AgentOutput<S>>((resolve, reject) => {
      this.resolveOutput = resolve;
      this.rejectOutput = reject;
    });
    this.outputPromise.catch(() => {}); // observed through output() / detach()
    let init;
    try {
      init = agentInitToWire(agent, source);
    } catch (err) {
      throw toClientError(err);
    }
    if (options.signal) {
      const outer = options.signal;
      if (outer.aborted) this.close();
      else {
        const onAbort = (): void => this.close();
        outer.addEventListener("abort", onAbort, { once: true });
        this.releaseOuterSignal = () => outer.removeEventListener("abort", onAbort);
      }
    }
    void this.run(init, retrier.budget("Chat", { ...options, signal: this.controller.signal }));
  }

  /** The conversation's session ID: from the source, then from each TurnEnd and the output. */
  get sessionId(): string | undefined {
    return this.position.sessionId;
  }

  /** The latest snapshot ID: the source's, then each TurnEnd's, then the output's (pending after detach). */
  get snapshotId(): string | undefined {
    return this.position.snapshotId;
  }

  /** The live custom state (a copy): the source state's, then with every streamed patch applied. */
  get custom(): S | undefined {
    return structuredClone(this.liveCustom);
  }

  /**
   * The final state from the output, for client-managed agents: pass it as
   * `client.chat(agent, { state })` to continue. Undefined until the output
   * arrived, and for server-managed agents.
   */
  get state(): SessionState<S> | undefined {
    return this.finalState;
  }

  /**
   * Queues an input (a string is a user text message) and returns its turn.
   * Throws a `ConnectError`: `Code.InvalidArgument` for a detach input (use
   * `detach()`) or an input that cannot be encoded, `Code.FailedPrecondition`
   * once output(), detach() or close() was called, or the call's error once it
   * failed.
   */
  send(input: ConversationInput): Turn {
    const normalized = normalizeInput(input);
    if (normalized.detach)
      throw clientError(Code.InvalidArgument, "send() cannot detach: call conversation.detach(input) instead");
    this.assertOpen("send");
    const wire = encodeInput(normalized);
    const turn = new Turn(wire.requestId, (t) => this.cancelTurn(t));
    this.outstanding.add({ wire, turn });
    this.requests.push({ input: wire });
    return turn;
  }

  /**
   * Steers the running turn with a message (a string is a user text): the
   * server hands it to that turn (prompt agents add it before their next
   * model call; custom agents read it with `turn.takeSteering()`), else it
   * runs as the next turn. Resolves once the server answered: `steered`, or
   * `queued` with the {@link Turn} it runs as. Never lost and never run
   * twice: it is sent once with its request ID; if the connection breaks
   * before the answer it rejects with `Code.Unavailable` (a steered turn
   * that had not ended is retried without it). Rejects with
   * `Code.InvalidArgument` for an input without a message, or with resume or
   * detach, and `Code.FailedPrecondition` once input is closed.
   */
  steer(input: ConversationInput): Promise<SteerResult> {
    const normalized = normalizeInput(input);
    if (!normalized.message || normalized.detach || normalized.resume)
      return Promise.reject(clientError(Code.InvalidArgument, "steer() takes a message only (no resume, no detach)"));
    try {
      this.assertOpen("steer");
    } catch (err) {
      return Promise.reject(err);
    }
    const wire = encodeInput({ ...normalized, steer: false });
    const turn = new Turn(wire.requestId, (t) => this.cancelTurn(t));
    this.outstanding.add({ wire, turn, steer: true });
    const answered = this.outstanding.expectAck(wire.requestId);
    this.requests.push({ input: { ...wire, steer: true } });
    return answered.then((ack) => (ack.result === "queued" ? { ack, turn } : { ack }));
  }

  /**
   * Hands the remaining work (in-flight and queued turns, plus `input` if
   * given) to the server and resolves with the output: `finishReason:
   * "detached"` and the pending `snapshotId` to watch or abort. Turns that had
   * not ended reject with `Code.Canceled` (no more chunks are streamed).
   * Rejects with `Code.FailedPrecondition` for client-managed agents and stores
   * without status subscription (server-side), or once input is closed.
   */
  detach(input?: ConversationInput): Promise<AgentOutput<S>> {
    const normalized: AgentInput = { ...(input !== undefined ? normalizeInput(input) : {}), detach: true };
    try {
      this.assertOpen("detach");
    } catch (err) {
      return Promise.reject(err);
    }
    const wire = encodeInput(normalized);
    this.outstanding.add({ wire, turn: undefined });
    this.requests.push({ input: wire });
    this.closeInput();
    return this.outputPromise;
  }

  /**
   * No more input: waits for every queued turn and resolves with the final
   * output (for client-managed agents it carries the new `state`). Idempotent.
   * Rejects with the call's `ConnectError` if it failed.
   */
  output(): Promise<AgentOutput<S>> {
    this.closeInput();
    return this.outputPromise;
  }

  /**
   * Cancels the call: turns that had not ended and the output reject with
   * `Code.Canceled`. Before detach the server cancels the work and writes no
   * snapshot for the running turn. No-op once the output arrived.
   */
  close(): void {
    if (this.settled) return;
    this.fail(clientError(Code.Canceled, "the conversation was closed by the client"));
    this.controller.abort();
  }

  /** `turn.cancel()`: a cancel input for the running turn, answered by its ack. */
  private cancelTurn(turn: Turn): Promise<InputAck> {
    if (this.outstanding.running?.turn !== turn || this.outstanding.running.steer)
      return Promise.reject(
        clientError(
          Code.FailedPrecondition,
          "only the running turn (the oldest that has not ended) can be cancelled; this one is queued behind it",
        ),
      );
    try {
      this.assertOpen("cancel");
    } catch (err) {
      return Promise.reject(err);
    }
    const wire = encodeInput({ cancel: true });
    const answered = this.outstanding.expectAck(wire.requestId);
    this.requests.push({ input: wire });
    return answered;
  }

  private assertOpen(what: string): void {
    if (this.failure) throw this.failure;
    if (this.inputClosed) {
      throw clientError(
        Code.FailedPrecondition,
        `cannot ${what}: the conversation's input is closed (output(), detach() or close() was called); start a new conversation with { sessionId } to continue`,
      );
    }
  }

  private closeInput(): void {
    this.inputClosed = true;
    this.requests.close();
  }

  /** Runs Chat attempts until the output arrives or a failure is not retried. */
  private async run(init: ChatRequestInit["init"], budget: RetryBudget): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      this.progressed = false;
      try {
        this.onOutput(await this.attempt(attempt === 1 ? init : this.reconnectInit(init), budget));
        return;
      } catch (err) {
        this.requests.close();
        if (this.settled) return;
        // A reopened Chat refused ABORTED before anything arrived met its own dropped invocation,
        // which holds the session until agentd notices the broken connection (nothing ran: the
        // busy check comes first): retried like a transport failure, within the same budget.
        const ownHolder = attempt > 1 && !this.progressed && ConnectError.from(err).code === Code.Aborted;
        if (this.position.failedTurn || !this.canReconnect() || !(await budget.retry(err, ownHolder))) {
          this.fail(chatError(err));
          return;
        }
      }
    }
  }

  /** One Chat call: the init, every outstanding input, the half-close if input is closed; resolves with the output. */
  private async attempt(init: ChatRequestInit["init"], budget: RetryBudget): Promise<AgentOutput<S>> {
    const requests = new AsyncChannel<ChatRequestInit>();
    this.requests = requests;
    this.outstanding.dropUnansweredControls();
    requests.push({ init });
    for (const wire of this.outstanding.wires()) requests.push({ input: wire });
    if (this.inputClosed) requests.close();
    this.position.startAttempt();
    let output: AgentOutput<S> | undefined;
    try {
      for await (const response of this.client.chat(requests, budget.callOptions())) {
        if (response.chunk) this.onChunk(streamChunkFromWire(response.chunk), budget);
        else if (response.output) output = agentOutputFromWire(response.output) as AgentOutput<S>;
      }
    } catch (err) {
      // The output is the call's last word: a transport fault after it (a reset stream) changes nothing.
      if (output) return output;
      if (this.position.failedTurn) throw failedTurnCut(err);
      throw err;
    }
    if (!output) throw clientError(Code.DataLoss, `the Chat stream ${INCOMPLETE_STREAM}`);
    return output;
  }

  /**
   * The init of a reconnect: the session by ID once known (server-managed),
   * else the original one — also while an edit of the past (init patches) has
   * not been committed by a turn, so that the edit is not lost.
   */
  private reconnectInit(original: ChatRequestInit["init"]): ChatRequestInit["init"] {
    const sessionId = this.position.sessionId;
    if (!sessionId || this.source.state || this.position.editPending) return original;
    const { busyPolicy } = this.source;
    return agentInitToWire(this.agent, { sessionId, ...(busyPolicy ? { busyPolicy } : {}) });
  }

  /** A client-managed conversation's state lives in the call: once a turn ended there, a new call cannot rebuild it. */
  private canReconnect(): boolean {
    return !this.source.state || this.position.turnsEnded === 0;
  }

  private onChunk(chunk: AgentStreamChunk, budget: RetryBudget): void {
    if (chunk.inputAck) {
      // Not part of any turn's chunks (and never re-sent after a reconnect: not counted in `delivered`).
      budget.progress();
      this.progressed = true;
      this.outstanding.onAck(chunk.inputAck);
      return;
    }
    const entry = this.outstanding.running;
    if (!this.position.accept(chunk)) return; // delivered before the reconnect
    budget.progress();
    this.progressed = true;
    if (chunk.customPatch) this.liveCustom = applyCustomPatch<S>(this.liveCustom, chunk.customPatch);
    if (!entry?.turn) return;
    entry.turn.push(chunk);
    if (chunk.turnEnd) this.outstanding.turnEnded();
  }

  private onOutput(output: AgentOutput<S>): void {
    if (this.settled) return;
    this.settled = true;
    this.releaseOuterSignal?.();
    this.closeInput();
    this.position.onOutput(output);
    if (output.state) {
      this.finalState = output.state;
      if (output.state.custom !== undefined) this.liveCustom = output.state.custom;
    }
    const reason =
      output.finishReason === "detached"
        ? clientError(
            Code.Canceled,
            `the conversation was detached before this turn ended; watch snapshot ${output.snapshotId} for the result`,
          )
        : clientError(
            Code.Aborted,
            `the invocation ended (finishReason "${output.finishReason}") before this turn ran; see conversation.output()`,
          );
    this.outstanding.failAll(reason);
    this.resolveOutput(output);
  }

  private fail(err: ConnectError): void {
    if (this.settled) return;
    this.settled = true;
    this.releaseOuterSignal?.();
    this.failure = err;
    this.closeInput();
    this.outstanding.failAll(err);
    this.rejectOutput(err);
  }
}

/**
 * The error of a Chat cut after a TurnEnd that said `failed` and before the
 * output that carries the turn's error: a failure (never retried), with the
 * transport's code and a message saying the turn failed.
 */
function failedTurnCut(err: unknown): ConnectError {
  const cause = toClientError(err);
  return new ConnectError(
    `the turn failed (finishReason "failed") and the stream broke before its error arrived (${cause.rawMessage}); read the session's latest snapshot, which the failed turn did not change`,
    cause.code,
    undefined,
    undefined,
    cause,
  );
}
