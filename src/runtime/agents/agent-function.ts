import type { Principal } from "../../types/principal.js";
import type { Model } from "../../models/model.js";
import type { AgentInput, ModelChunk, TurnResult } from "../../types/agent-io.js";
import type { Artifact } from "../../types/content.js";
import type { SessionRunner } from "../sessions/session-runner.js";
import type { AgentResult, TurnContext } from "../sessions/turn-context.js";

export type { AgentResult, TurnContext } from "../sessions/turn-context.js";

/**
 * The output channel of an agent. Artifacts sent here are recorded in the
 * session before the call returns (same-named ones replace) and streamed.
 * After detach, nothing is streamed but side effects still apply.
 */
export interface Responder {
  /**
   * Streams a piece of model output. Returns a promise when the chunk waits
   * for a chunk transform or for the reader (the invocation's chunk buffer is
   * full: backpressure); await what it returns when streaming many chunks in
   * a loop. The promise never rejects.
   */
  sendModelChunk(chunk: ModelChunk): Promise<void> | void;
  /** Records the artifact in the session and streams it; the promise is the backpressure of {@link sendModelChunk}. */
  sendArtifact(artifact: Artifact): Promise<void> | void;
}

/** Everything a custom agent's code can use. */
export interface AgentContext<S> {
  /** The session: messages, custom state, artifacts, and the turn loop. */
  session: SessionRunner<S>;
  responder: Responder;
  /** Aborts when the invocation is cancelled. */
  signal: AbortSignal;
  /**
   * The model to call: a name resolved through the registry's models (e.g.
   * "echo"), or a {@link Model} object used as is. Either way its token usage
   * is counted for the turn and, with telemetry on, each call is traced.
   */
  model(model: string | Model): Model;
  /** Who the invocation acts for (`ANONYMOUS` on a server without authentication, and in-process unless given). */
  principal: Principal;
}

/**
 * A custom agent's whole invocation: typically `await ctx.session.run(turnFn)`
 * then `return ctx.session.result()`. Throwing fails the invocation in-band.
 */
export type AgentFn<S> = (ctx: AgentContext<S>) => Promise<AgentResult | void>;

/** Per-turn context: the agent context plus the turn's identity. */
export interface TurnFnContext<S> extends AgentContext<S> {
  turn: TurnContext;
}

/**
 * One turn of a custom agent. The input's message is already in the history.
 * Throwing fails the turn in-band (no snapshot is written).
 */
export type TurnFn<S> = (input: AgentInput, ctx: TurnFnContext<S>) => Promise<TurnResult | void>;
