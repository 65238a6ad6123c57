import type { AgentInput as WireAgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { agentInputToWire } from "../protocol/index.js";
import type { AgentInput } from "../types/agent-io.js";
import { userText } from "../types/content.js";
import { toClientError } from "./client-errors.js";
import { newRequestId } from "./request-id.js";

/** What `conversation.send()` and `detach()` accept: a user text, or a full input. */
export type ConversationInput = string | AgentInput;

/** The {@link AgentInput} a {@link ConversationInput} stands for: a string becomes a user text message. */
export function normalizeInput(input: ConversationInput): AgentInput {
  return typeof input === "string" ? { message: userText(input) } : input;
}

/** The input on the wire, with its request ID (the caller's, else a new UUID). */
export function encodeInput(input: AgentInput): WireAgentInput {
  try {
    const wire = agentInputToWire(input);
    wire.requestId = input.requestId ?? newRequestId();
    return wire;
  } catch (err) {
    throw toClientError(err);
  }
}
