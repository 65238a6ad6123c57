import { Code, type CallOptions, type Client, type ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentService, ChatRequestSchema, ChatResponse } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { AsyncChannel } from "../protocol/async-channel.js";
import { applyCustomPatch } from "../protocol/custom-patch-stream.js";
import { agentInitToWire, agentInputToWire, agentOutputFromWire, streamChunkFromWire } from "../protocol/index.js";
import type { AgentInput, AgentOutput, AgentStreamChunk } from "../types/agent-io.js";
import { userText } from "../types/content.js";
import type { AgentInit, SessionState } from "../types/session-state.js";
import { chatError, clientError, toClientError } from "./client-errors.js";
import { Turn } from "./turn.js";

type ChatRequestInit = MessageInitShape<typeof ChatRequestSchema>;

/** What `conversation.send()` and `detach()` accept: a user text, or a full input. */
export type ConversationInput = string | AgentInput;

/**
 * A live multi-turn Chat with one agent (one bidi `AgentService.Chat` call),
 * created by `client.chat(agent, source)`.
 *
 * - `send()` queues an input and returns its {@link Turn} at once; several
 *   sends may be queued before any is read. Turns end in order.
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
 * Every rejection is a `ConnectError` (see `err.code`). In-band failures do not
 * reject: a failed turn resolves with `finishReason: "failed"`, the invocation
 * ends there (turns queued behind it reject with `Code.Aborted`), and the
 * output carries `error`.
 */
export class Conversation<S = unknown> {
  /** The agent this conversation talks to. */
  readonly agent: string;
  private readonly requests = new AsyncChannel<ChatRequestInit>();
  private readonly pending: Turn[] = [];
  private readonly controller = new AbortController();
  private readonly outputPromise: Promise<AgentOutput<S>>;
  private resolveOutput!: (output: AgentOutput<S>) => void;
  private rejectOutput!: (err: ConnectError) => void;
  private liveCustom: S | undefined;
  private currentSessionId: string | undefined;
  private currentSnapshotId: string | undefined;
  private finalState: SessionState<S> | undefined;
  private inputClosed = false;
  private settled = false;
  private failure: ConnectError | undefined;
  /** Removes the listener on the caller's `options.signal` (it must not outlive the call). */
  private releaseOuterSignal: (() => void) | undefined;

  /** Opens the Chat call. Use `client.chat()` rather than constructing this directly. */
  constructor(
    client: Client<typeof AgentService>,
    agent: string,
    source: AgentInit<S> = {},
    options: CallOptions = {},
  ) {
    this.agent = agent;
    this.currentSessionId = source.sessionId ?? source.state?.sessionId;
    this.currentSnapshotId = source.snapshotId;
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
    this.requests.push({ init });
    if (options.signal) {
      const outer = options.signal;
      if (outer.aborted) this.close();
      else {
        const onAbort = (): void => this.close();
        outer.addEventListener("abort", onAbort, { once: true });
        this.releaseOuterSignal = () => outer.removeEventListener("abort", onAbort);
      }
    }
    void this.read(client.chat(this.requests, { ...options, signal: this.controller.signal }));
  }

  /** The conversation's session ID: from the source, then from each TurnEnd and the output. */
  get sessionId(): string | undefined {
    return this.currentSessionId;
  }

  /** The latest snapshot ID: the source's, then each TurnEnd's, then the output's (pending after detach). */
  get snapshotId(): string | undefined {
    return this.currentSnapshotId;
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
    const turn = new Turn();
    this.pending.push(turn);
    this.requests.push({ input: wire });
    return turn;
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
    this.requests.push({ input: encodeInput(normalized) });
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

  private async read(responses: AsyncIterable<ChatResponse>): Promise<void> {
    try {
      let output: AgentOutput<S> | undefined;
      for await (const response of responses) {
        if (response.chunk) this.onChunk(streamChunkFromWire(response.chunk));
        else if (response.output) output = agentOutputFromWire(response.output) as AgentOutput<S>;
      }
      if (!output) throw clientError(Code.DataLoss, "the Chat stream ended without an output");
      this.onOutput(output);
    } catch (err) {
      this.fail(chatError(err));
    }
  }

  private onChunk(chunk: AgentStreamChunk): void {
    if (chunk.customPatch) this.liveCustom = applyCustomPatch<S>(this.liveCustom, chunk.customPatch);
    if (chunk.turnEnd) {
      if (chunk.turnEnd.sessionId) this.currentSessionId = chunk.turnEnd.sessionId;
      if (chunk.turnEnd.snapshotId) this.currentSnapshotId = chunk.turnEnd.snapshotId;
    }
    const turn = this.pending[0];
    if (!turn) return;
    turn.push(chunk);
    if (chunk.turnEnd) this.pending.shift();
  }

  private onOutput(output: AgentOutput<S>): void {
    if (this.settled) return;
    this.settled = true;
    this.releaseOuterSignal?.();
    this.closeInput();
    if (output.sessionId) this.currentSessionId = output.sessionId;
    if (output.snapshotId) this.currentSnapshotId = output.snapshotId;
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
    for (const turn of this.pending.splice(0)) turn.fail(reason);
    this.resolveOutput(output);
  }

  private fail(err: ConnectError): void {
    if (this.settled) return;
    this.settled = true;
    this.releaseOuterSignal?.();
    this.failure = err;
    this.closeInput();
    for (const turn of this.pending.splice(0)) turn.fail(err);
    this.rejectOutput(err);
  }
}

/** The {@link AgentInput} a {@link ConversationInput} stands for: a string becomes a user text message. */
export function normalizeInput(input: ConversationInput): AgentInput {
  return typeof input === "string" ? { message: userText(input) } : input;
}

function encodeInput(input: AgentInput) {
  try {
    return agentInputToWire(input);
  } catch (err) {
    throw toClientError(err);
  }
}
