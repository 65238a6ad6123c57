import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { MessageSchema, Role as WireRole, type Message as WireMessage } from "../../gen/ts/agentd/v1/content_pb.js";
import { AgentError } from "../errors/agent-error.js";
import type { Message } from "../types/content.js";
import { messageFromWire, messageToWire } from "./content-wire.js";

/** A runtime message in its wire JSON form: `agentd.v1.Message` as proto JSON (what GetSnapshot shows over the wire). */
export function messageToJson(message: Message): JsonValue {
  return toJson(MessageSchema, messageToWire(message));
}

/**
 * A message given in its wire JSON form, as a runtime message. It must be a
 * well-formed message: an `agentd.v1.Message` with a role and at least one
 * part, each part with content. Throws INVALID_ARGUMENT starting with `what`
 * (e.g. `init.messages_patch: message 3`) otherwise, naming the field that
 * failed but never quoting its value (it may be conversation content).
 */
export function messageFromJson(json: unknown, what: string): Message {
  let wire: WireMessage;
  try {
    wire = fromJson(MessageSchema, json as JsonValue);
  } catch (err) {
    throw new AgentError("INVALID_ARGUMENT", `${what} is not an agentd.v1.Message: ${decodeFailure(err)}`, {
      details: { field: what },
    });
  }
  if (wire.role === WireRole.UNSPECIFIED) {
    throw new AgentError("INVALID_ARGUMENT", `${what} has no role (ROLE_USER, ROLE_MODEL, ROLE_SYSTEM or ROLE_TOOL)`, {
      details: { field: what },
    });
  }
  if (wire.content.length === 0 || wire.content.some((p) => p.kind.case === undefined)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${what} needs at least one part, each with content (text, tool_request, ...)`,
      { details: { field: what } },
    );
  }
  return messageFromWire(wire);
}

/**
 * What protobuf-es could not decode, without the JSON it quotes
 * (`cannot decode field agentd.v1.Part.text from JSON: expected string, got "…"`
 * becomes `field agentd.v1.Part.text does not decode`).
 */
function decodeFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : "";
  const named = /^cannot decode (field|message|enum|oneof) ([\w.]+) from JSON/.exec(message);
  return named ? `${named[1]} ${named[2]} does not decode (wrong type, unknown key or value)` : "it does not decode";
}
