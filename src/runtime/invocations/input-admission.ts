import { AgentError } from "../../errors/agent-error.js";
import { hasResume, type AgentInput } from "../../types/agent-io.js";
import { validRequestId } from "../sessions/request-ledger.js";

/** What an invocation knows when an input arrives. */
export interface AdmissionState {
  /** How many inputs wait for their turn. */
  queued: number;
  /** The most that may wait (one more is RESOURCE_EXHAUSTED). */
  maxQueued: number;
}

/** An input the invocation accepted: the turn input to queue (if any) and whether it detaches. */
export interface AdmittedInput {
  /** The message and/or tool resume that starts a turn; absent for a bare detach (and for a control input). */
  turn?: AgentInput;
  detach: boolean;
  /** A control input, handled as it arrives: `cancel`, or `steer` (its message is `turn`). */
  control?: "cancel" | "steer";
}

/**
 * Checks one client input and splits it into its turn part and its detach
 * flag. Throws INVALID_ARGUMENT for an empty input (no message, resume or
 * detach), a message without content parts or a malformed request ID
 * (`validRequestId`), and RESOURCE_EXHAUSTED when a
 * turn input would queue past `state.maxQueued`.
 */
export function admitInput(input: AgentInput, state: AdmissionState): AdmittedInput {
  if (input.cancel || input.steer) return admitControl(input);
  const resuming = hasResume(input);
  if (!input.message && !resuming && !input.detach) {
    throw new AgentError("INVALID_ARGUMENT", "input is empty: set message, resume or detach");
  }
  if (input.message && input.message.content.length === 0) {
    throw new AgentError("INVALID_ARGUMENT", "input.message has no content parts");
  }
  const requestId = validRequestId(input.requestId);
  const detach = input.detach === true;
  if (!input.message && !resuming) return { detach };
  if (state.queued >= state.maxQueued) {
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `${state.queued} inputs are already queued on this invocation (the limit is ${state.maxQueued}); wait for a TurnEnd before sending more`,
      { details: { maxQueuedInputs: state.maxQueued } },
    );
  }
  const turn: AgentInput = {
    ...(input.message ? { message: input.message } : {}),
    ...(resuming ? { resume: input.resume } : {}),
  };
  if (requestId) turn.requestId = requestId;
  return { turn, detach };
}

/**
 * A control input: `cancel` alone (no message, resume, detach or steer), or
 * `steer` with a message with content (no resume or detach). Throws
 * INVALID_ARGUMENT naming what is wrong. A steer's `turn` keeps its request ID.
 */
function admitControl(input: AgentInput): AdmittedInput {
  const requestId = validRequestId(input.requestId);
  if (input.cancel) {
    if (input.steer || input.message || hasResume(input) || input.detach)
      throw new AgentError(
        "INVALID_ARGUMENT",
        "input.cancel carries nothing else: send message, resume, steer or detach in another input",
      );
    return { detach: false, control: "cancel" };
  }
  if (!input.message || input.message.content.length === 0)
    throw new AgentError("INVALID_ARGUMENT", "input.steer needs input.message with at least one content part");
  if (hasResume(input) || input.detach)
    throw new AgentError(
      "INVALID_ARGUMENT",
      "input.steer carries a message only: send resume or detach in another input",
    );
  const turn: AgentInput = { message: input.message };
  if (requestId) turn.requestId = requestId;
  return { turn, detach: false, control: "steer" };
}
