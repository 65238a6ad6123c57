import type { AgentErrorData } from "../errors/agent-error.js";
import type { Artifact, Message, Part, Role } from "./content.js";
import type { SessionState } from "./session-state.js";
import type { FinishReason } from "./snapshot.js";
import type { Usage } from "./usage.js";
import type { JsonPatchOperation } from "./json-patch.js";
import type { ToolResume } from "./tool-resume.js";

export type { JsonPatchOperation } from "./json-patch.js";
export type { ToolResume } from "./tool-resume.js";

/** One input of a conversation. Mirrors `agentd.v1.AgentInput`. */
export interface AgentInput {
  message?: Message;
  resume?: ToolResume;
  /** Hand the rest of the work to the server (background invocation). */
  detach?: boolean;
  /**
   * Idempotency key (AIP-155), e.g. a UUID the client generates once per
   * input and reuses on every retry of it: at most 64 characters of
   * `[A-Za-z0-9_-]`. A server-managed session that committed this ID's turn
   * (within its request-ID window) answers a retry with that turn instead of
   * running it again; see docs/turns.md "Retries and exactly-once turns". The
   * clients set a random UUID when it is absent.
   */
  requestId?: string;
  /**
   * Control input: cancel the turn in flight and keep the conversation (its
   * abort signals fire, its TurnEnd says `aborted`, nothing of it is written).
   * Carries nothing else; answered by an {@link InputAck} chunk.
   */
  cancel?: boolean;
  /**
   * Control input: this input's message steers the turn in flight (prompt
   * agents add it before their next model call, custom agents read it with
   * `turn.takeSteering()`); when no turn takes it, it runs as the next turn.
   * Answered by an {@link InputAck} chunk.
   */
  steer?: boolean;
}

/** What became of a control input (cancel or steer). Mirrors `agentd.v1.InputAckResult`. */
export type InputAckResult = "cancelled" | "nothing_to_cancel" | "steered" | "queued";

/** Answers a control input (cancel or steer). Mirrors `agentd.v1.InputAck`. */
export interface InputAck {
  /** The control input's request ID, if it had one. */
  requestId?: string;
  result: InputAckResult;
  /** The turn the input reached (cancelled or steered), or for `queued` the turn it runs as when known. */
  turnIndex?: number;
}

/** True when `input` resumes an interrupted turn (its resume has at least one respond or restart part). */
export function hasResume(input: AgentInput): boolean {
  return (input.resume?.respond?.length ?? 0) + (input.resume?.restart?.length ?? 0) > 0;
}

/** A piece of streamed model output. */
export interface ModelChunk {
  role: Role;
  content: Part[];
  /** Index of the model message this chunk belongs to within the turn. */
  index?: number;
}

/** Sent exactly once at the end of each turn. */
export interface TurnEnd {
  /** The turn-end snapshot; absent for client-managed agents and failed turns. */
  snapshotId?: string;
  finishReason: FinishReason;
  turnIndex: number;
  /** The conversation the turn belongs to. */
  sessionId: string;
  /** Model tokens the turn used (its model calls added up); absent when no model call reported usage. */
  usage?: Usage;
}

/** One item of an agent's output stream. Mirrors `agentd.v1.AgentStreamChunk`. */
export interface AgentStreamChunk {
  modelChunk?: ModelChunk;
  customPatch?: JsonPatchOperation[];
  artifact?: Artifact;
  turnEnd?: TurnEnd;
  /** Only in the stream of detached work: another instance took the work over here (see {@link Takeover}). */
  takeover?: Takeover;
  /** Answers a control input (cancel or steer) of the conversation. */
  inputAck?: InputAck;
  /**
   * The chunk's position in its invocation's stream: 1 for the first chunk,
   * then one more per chunk (no gaps). Set by the runtime on every chunk it
   * streams; a client re-attaches to detached work after the last one it got.
   */
  sequence?: number;
}

/**
 * Where another instance took over detached work whose worker died. Mirrors
 * `agentd.v1.Takeover`: the chunks after `supersededAfter` (up to this one)
 * belong to the cut part of a turn and are superseded; that turn runs again as
 * `turnIndex` from its last checkpoint (after its last completed tool round,
 * or from its start).
 */
export interface Takeover {
  /** The last chunk the work's checkpoint covers: the last completed turn's TurnEnd, or a checkpoint inside the cut turn (0: none since detach). */
  supersededAfter: number;
  /** The turn that runs next (the cut turn, continued or restarted). */
  turnIndex: number;
}

/** The result of an invocation. Mirrors `agentd.v1.AgentOutput`. */
export interface AgentOutput<S = unknown> {
  /**
   * The session. Empty when a server-managed invocation started a new session
   * and committed no turn (init without input, a failed first turn): nothing
   * was created, so there is nothing to resume or read.
   */
  sessionId: string;
  /** Last turn-end snapshot, or the pending snapshot after detach. */
  snapshotId?: string;
  /** The last model message. */
  message?: Message;
  artifacts: Artifact[];
  /** Final (transformed) state, client-managed agents only. */
  state?: SessionState<S>;
  finishReason: FinishReason;
  /** Set when finishReason is `failed`. */
  error?: AgentErrorData;
  /** Model tokens this invocation used (its turns added up; after detach, the turns before it); absent when none reported. */
  usage?: Usage;
}

/** How a turn ended, as returned by a custom agent's turn function. */
export interface TurnResult {
  finishReason?: FinishReason;
}

/** Who keeps an agent's conversation state. */
export type StateManagement = "server" | "client";

/** Describes a served agent (ListAgents). */
export interface AgentDescriptor {
  name: string;
  description?: string;
  stateManagement: StateManagement;
  abortable: boolean;
  /** JSON Schema of the custom state (empty object when the agent has none). */
  stateSchema: Record<string, unknown>;
}
