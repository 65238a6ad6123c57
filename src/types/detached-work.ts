import type { AgentInput, InputAck } from "./agent-io.js";
import type { Message } from "./content.js";
import type { SessionState } from "./session-state.js";

/** Who ran one part of detached work. */
export interface DetachedWorkRun {
  /** The invocation that ran it (also the session lease's holder while it ran). */
  invocationId: string;
  /** The server instance (`--instance-id`, default `<hostname>:<pid>`). */
  instance: string;
  /** Epoch ms when it started (detach, or takeover). */
  startedAt: number;
  /** Index into {@link DetachedWork.inputs} of the first input it ran. */
  fromInput: number;
}

/** Who the detached work acts for (the principal of the call that detached it). */
export interface DetachedWorkPrincipal {
  subject: string;
  tenant: string;
  claims: Record<string, unknown>;
}

/**
 * What the pending row of detached work records so that another instance can
 * take it over when its worker dies: the inputs still to run at detach (the
 * first may be the turn that was running), how many of them completed (their
 * turns are in the row's state), the stream position of the last completed
 * turn's end, and every run that worked on it.
 */
export interface DetachedWork {
  /** The inputs queued (or running) at detach, in order: messages and tool resumes only. */
  inputs: AgentInput[];
  /** Turn index of `inputs[0]`. */
  firstTurnIndex: number;
  /** How many of `inputs` completed; their turns are in the row's state fields. */
  completed: number;
  /**
   * The stream position the row's state matches: the `sequence` of the last
   * completed turn's TurnEnd, or of the last chunk before a checkpoint inside
   * a turn (0 before any).
   */
  lastSequence: number;
  /**
   * Set when the row's state holds part of `inputs[completed]`'s turn (its
   * message and what it did up to a `checkpoint()`, e.g. its completed tool
   * rounds): a takeover continues that turn instead of restarting it.
   */
  inTurn?: boolean;
  /** Each run that worked on it, in order; the last one holds it now. */
  runs: DetachedWorkRun[];
  principal: DetachedWorkPrincipal;
  /**
   * The state before `inputs[0]` when the session had no committed snapshot yet
   * (the row then has no parent), or when it started from an edited copy of the
   * parent's state (a fork from an edited past).
   */
  initialState?: SessionState<unknown>;
  /**
   * Control inputs posted by other instances (`SendInvocationInput`), oldest
   * first (the last 16): the worker applies each at its next row write and
   * sets its `ack`.
   */
  controls?: PostedControl[];
}

/** A control input (cancel, or steer with a message) posted on a pending row for the instance running the work. */
export interface PostedControl {
  requestId: string;
  cancel?: boolean;
  /** The steer's message. */
  steer?: Message;
  /** Epoch ms when it was posted. */
  postedAt: number;
  /** Set by the worker once it applied the input. */
  ack?: InputAck;
}
