import { create } from "@bufbuild/protobuf";
import { ConnectError, type HandlerContext } from "@connectrpc/connect";
import { ChatResponseSchema, type ChatRequest, type ChatResponse } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import type { AgentInit as WireAgentInit, AgentInput as WireAgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { AgentError } from "../errors/agent-error.js";
import { agentInputFromWire, agentOutputToWire, streamChunkToWire } from "../protocol/index.js";
import { statusForCode } from "../protocol/status-codes.js";
import type { AgentConnection } from "../runtime/agents/agent-connection.js";
import type { AgentStreamChunk } from "../types/agent-io.js";
import { credentialCheckKey, type CredentialCheck } from "./auth/credential-recheck.js";
import { annotateCall } from "./call-log.js";
import { beforeLargeOutput } from "./large-output.js";
import { DRAIN_MESSAGE, drainSignalKey } from "./drain-signal.js";

/**
 * The response stream of one `AgentService/Chat` call: opens the connection
 * from the first request (its init, and its input if any), feeds the later
 * requests' inputs into it, and answers every chunk of every turn, then the
 * output. The call's log line names the last committed snapshot, also when
 * the stream fails or the client goes away.
 *
 * Written as an iterator rather than an `async function*`: an async
 * generator costs several promises per message, and this runs for every
 * chunk of every turn. It behaves like the generator it replaces: one
 * `next()` at a time, `return()` and `throw()` close the chunk stream.
 */
export function chatResponses(
  requests: AsyncIterable<ChatRequest>,
  ctx: HandlerContext,
  open: (init: WireAgentInit | undefined, input: WireAgentInput | undefined) => Promise<AgentConnection>,
): AsyncIterable<ChatResponse> {
  return { [Symbol.asyncIterator]: () => new ChatResponseStream(requests, ctx, open) };
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

class ChatResponseStream implements AsyncIterator<ChatResponse> {
  private state: "opening" | "streaming" | "output" | "done" = "opening";
  private connection: AgentConnection | undefined;
  private chunks: AsyncIterator<AgentStreamChunk> | undefined;
  /** Where the request pump feeds inputs; emptied when the call ends, so a pump left waiting for a request holds nothing of it. */
  private readonly inputs: InputSink = { connection: undefined, turns: 0 };
  /** The snapshot of the last TurnEnd streamed (for the call's log line). */
  private committed: string | undefined;
  /** TurnEnds streamed: with `inputs.turns`, whether a turn runs or waits (see {@link onDrain}). */
  private turnEnds = 0;
  /** The server drains: the call ends with UNAVAILABLE after the running turn's TurnEnd, or at once when idle. */
  private draining = false;
  private stopWatchingDrain: (() => void) | undefined;

  constructor(
    private readonly requests: AsyncIterable<ChatRequest>,
    private readonly ctx: HandlerContext,
    private readonly open: (
      init: WireAgentInit | undefined,
      input: WireAgentInput | undefined,
    ) => Promise<AgentConnection>,
  ) {}

  next(): Promise<IteratorResult<ChatResponse>> {
    switch (this.state) {
      case "streaming":
        return this.chunks!.next().then(
          (result) => this.answer(result),
          (err: unknown) => this.fail(err),
        );
      case "opening":
        return this.start().then(
          () => this.next(),
          (err: unknown) => this.fail(err),
        );
      case "output":
        return this.output().catch((err: unknown) => this.fail(err));
      case "done":
        return Promise.resolve(DONE);
    }
  }

  return(): Promise<IteratorResult<ChatResponse>> {
    return this.close().then(() => DONE);
  }

  throw(err?: unknown): Promise<IteratorResult<ChatResponse>> {
    return this.close().then(() => Promise.reject(err));
  }

  /** Reads the first request, opens the connection and starts feeding it the later ones. */
  private async start(): Promise<void> {
    const iterator = this.requests[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done || !first.value.init) {
      throw new AgentError("INVALID_ARGUMENT", "the first ChatRequest must carry init (agent name and resume source)");
    }
    const connection = await this.open(first.value.init, first.value.input);
    this.connection = connection;
    if (first.value.input) {
      sendInput(connection, first.value.input);
      if (runsTurn(first.value.input)) this.inputs.turns++;
    }
    this.inputs.connection = connection;
    void pumpInputs(iterator, this.inputs, this.ctx.values.get(credentialCheckKey));
    this.chunks = connection.stream[Symbol.asyncIterator]();
    this.state = "streaming";
    this.watchDrain();
  }

  /** Hands the call off when the server drains (see {@link drainSignalKey}). */
  private watchDrain(): void {
    const signal = this.ctx.values.get(drainSignalKey);
    if (!signal) return;
    const onDrain = (): void => this.onDrain();
    if (signal.aborted) onDrain();
    else {
      signal.addEventListener("abort", onDrain, { once: true });
      this.stopWatchingDrain = () => signal.removeEventListener("abort", onDrain);
    }
  }

  /**
   * The server drains: an idle invocation (no turn running or queued) ends
   * now with UNAVAILABLE; one with a running turn ends right after that
   * turn's TurnEnd ({@link answer}). Inputs queued behind it are not run
   * here: the client re-sends them (by request ID) on its reconnect.
   */
  private onDrain(): void {
    this.draining = true;
    if (this.state === "streaming" && this.inputs.turns <= this.turnEnds) this.handOff();
  }

  private handOff(): void {
    this.connection?.cancel(new AgentError("UNAVAILABLE", DRAIN_MESSAGE));
  }

  private answer(
    result: IteratorResult<AgentStreamChunk>,
  ): Promise<IteratorResult<ChatResponse>> | IteratorResult<ChatResponse> {
    if (result.done) {
      // The output names the last snapshot (and a failing output() notes `committed` in fail()).
      this.state = "output";
      return this.next();
    }
    const chunk = result.value;
    if (chunk.turnEnd) {
      if (chunk.turnEnd.snapshotId) this.committed = chunk.turnEnd.snapshotId;
      this.turnEnds++;
      if (this.draining) this.handOff(); // this TurnEnd still goes out; the stream then fails UNAVAILABLE
    } else if (chunk.inputAck?.result === "queued") this.inputs.turns++; // a steer that runs as its own turn
    return { done: false, value: create(ChatResponseSchema, { chunk: streamChunkToWire(chunk) }) };
  }

  private async output(): Promise<IteratorResult<ChatResponse>> {
    const output = await this.connection!.output();
    this.state = "done";
    this.release();
    annotateCall(this.ctx, { snapshotId: output.snapshotId });
    const encodeLater = beforeLargeOutput(output);
    if (encodeLater) await encodeLater; // no hop for a normal output
    return { done: false, value: create(ChatResponseSchema, { output: agentOutputToWire(output) }) };
  }

  private fail(err: unknown): never {
    this.state = "done";
    this.annotateCommitted();
    this.release();
    throw err;
  }

  /** Ends the stream early: closes the chunk stream and notes the last commit. */
  private async close(): Promise<void> {
    if (this.state === "done") return;
    this.state = "done";
    try {
      await this.chunks?.return?.();
    } finally {
      this.annotateCommitted();
      this.release();
    }
  }

  /**
   * Drops every reference to the invocation once the call has its status:
   * the transport may keep this stream (and a request pump waiting for a
   * request that never comes) until the client closes its side.
   */
  private release(): void {
    this.stopWatchingDrain?.();
    this.stopWatchingDrain = undefined;
    this.connection = undefined;
    this.chunks = undefined;
    this.inputs.connection = undefined;
  }

  private annotateCommitted(): void {
    if (this.committed) annotateCall(this.ctx, { snapshotId: this.committed });
  }
}

/** Converts and queues one input; a rejected input ends the invocation with its error. */
export function sendInput(connection: AgentConnection, input: WireAgentInput): void {
  try {
    connection.send(agentInputFromWire(input));
  } catch (err) {
    const error = AgentError.from(err, "INVALID_ARGUMENT");
    connection.cancel(error);
    throw error;
  }
}

/** The connection a request pump feeds; `undefined` once the call ended (the pump then stops). */
interface InputSink {
  connection: AgentConnection | undefined;
  /** Inputs fed that run as a turn of their own (not cancel or steer). */
  turns: number;
}

/** Whether `input` runs as a turn of its own (a cancel or a steer does not, unless the steer is queued). */
function runsTurn(input: WireAgentInput): boolean {
  return !input.cancel && !input.steer;
}

/**
 * Feeds the rest of a Chat request stream into `sink`'s connection;
 * half-close means "no more input". It holds the connection only through
 * `sink`, never across a wait for the next request, so a call that ended
 * while the client keeps its side open leaves nothing reachable here. Each
 * input first re-checks the call's credential (`credentialCheck`): revoked or
 * expired ends the invocation UNAUTHENTICATED.
 */
async function pumpInputs(
  requests: AsyncIterator<ChatRequest>,
  sink: InputSink,
  credentialCheck: CredentialCheck | undefined,
): Promise<void> {
  try {
    for (;;) {
      const next = await requests.next();
      if (next.done) break;
      if (credentialCheck) {
        const pending = credentialCheck();
        if (pending) await pending;
      }
      if (next.value.init) throw new AgentError("INVALID_ARGUMENT", "init is only allowed on the first ChatRequest");
      if (!next.value.input) throw new AgentError("INVALID_ARGUMENT", "a ChatRequest after the first must carry input");
      if (!sink.connection) return;
      sendInput(sink.connection, next.value.input);
      if (runsTurn(next.value.input)) sink.turns++;
    }
    sink.connection?.close();
  } catch (err) {
    const error =
      err instanceof ConnectError
        ? new AgentError(statusForCode(err.code), err.rawMessage)
        : AgentError.from(err, "INVALID_ARGUMENT");
    sink.connection?.cancel(error);
  }
}
