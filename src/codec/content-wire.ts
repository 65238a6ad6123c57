import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ArtifactSchema,
  MessageSchema,
  PartSchema,
  type Artifact as WireArtifact,
  type Message as WireMessage,
  type Part as WirePart,
} from "../../gen/ts/agentd/v1/content_pb.js";
import type { Artifact, Message, Part, Role } from "../types/content.js";
import { roleFromWire, roleToWire } from "./enum-wire.js";
import { optionalString, structFromWire, structToWire, valueFromWire, valueToWire } from "./json-wire.js";

/**
 * A runtime part as `agentd.v1.Part`. The first content field set wins
 * (text, media, toolRequest, toolResponse, data, reasoning, custom); a part
 * with none carries only metadata.
 */
export function partToWire(part: Part): WirePart {
  // One init shape for every part (metadata undefined when absent): this runs for every streamed chunk.
  return create(PartSchema, { metadata: structToWire(part.metadata, "part metadata"), kind: partKindToWire(part) });
}

/** The `kind` oneof of a part's first content field set, or undefined for a metadata-only part. */
function partKindToWire(part: Part): MessageInitShape<typeof PartSchema>["kind"] {
  if (part.text !== undefined) return { case: "text", value: part.text };
  if (part.media !== undefined) {
    return { case: "media", value: { url: part.media.url, contentType: part.media.contentType ?? "" } };
  }
  if (part.toolRequest !== undefined) {
    const { ref, name, input } = part.toolRequest;
    return { case: "toolRequest", value: { ref: ref ?? "", name, input: valueToWire(input, "tool request input") } };
  }
  if (part.toolResponse !== undefined) {
    const { ref, name, output } = part.toolResponse;
    return {
      case: "toolResponse",
      value: { ref: ref ?? "", name, output: valueToWire(output, "tool response output") },
    };
  }
  if ("data" in part && part.data !== undefined) return { case: "data", value: valueToWire(part.data, "data part")! };
  if (part.reasoning !== undefined) return { case: "reasoning", value: part.reasoning };
  if (part.custom !== undefined) return { case: "custom", value: structToWire(part.custom, "custom part")! };
  return undefined;
}

/** An `agentd.v1.Part` as a runtime part (empty strings in optional fields are dropped). */
export function partFromWire(part: WirePart): Part {
  const out: Part = {};
  const kind = part.kind;
  switch (kind.case) {
    case "text":
      out.text = kind.value;
      break;
    case "media":
      out.media = { url: kind.value.url, ...(kind.value.contentType ? { contentType: kind.value.contentType } : {}) };
      break;
    case "toolRequest": {
      const input = valueFromWire(kind.value.input);
      out.toolRequest = {
        ...(kind.value.ref ? { ref: kind.value.ref } : {}),
        name: kind.value.name,
        ...(input !== undefined ? { input } : {}),
      };
      break;
    }
    case "toolResponse": {
      const output = valueFromWire(kind.value.output);
      out.toolResponse = {
        ...(kind.value.ref ? { ref: kind.value.ref } : {}),
        name: kind.value.name,
        ...(output !== undefined ? { output } : {}),
      };
      break;
    }
    case "data":
      out.data = valueFromWire(kind.value) ?? null;
      break;
    case "reasoning":
      out.reasoning = kind.value;
      break;
    case "custom":
      out.custom = structFromWire(kind.value);
      break;
  }
  const metadata = structFromWire(part.metadata);
  if (metadata) out.metadata = metadata;
  return out;
}

/** A runtime message as `agentd.v1.Message`. */
export function messageToWire(message: Message): WireMessage {
  const metadata = structToWire(message.metadata, "message metadata");
  return create(MessageSchema, {
    role: roleToWire(message.role),
    content: message.content.map(partToWire),
    ...(metadata ? { metadata } : {}),
  });
}

/** An `agentd.v1.Message` as a runtime message; ROLE_UNSPECIFIED reads as `defaultRole` (default "user"). */
export function messageFromWire(message: WireMessage, defaultRole: Role = "user"): Message {
  const metadata = structFromWire(message.metadata);
  return {
    role: roleFromWire(message.role, defaultRole),
    content: message.content.map(partFromWire),
    ...(metadata ? { metadata } : {}),
  };
}

/** A runtime artifact as `agentd.v1.Artifact`. */
export function artifactToWire(artifact: Artifact): WireArtifact {
  const metadata = structToWire(artifact.metadata, "artifact metadata");
  return create(ArtifactSchema, {
    name: artifact.name ?? "",
    parts: artifact.parts.map(partToWire),
    ...(metadata ? { metadata } : {}),
  });
}

/** An `agentd.v1.Artifact` as a runtime artifact (an empty name means unnamed). */
export function artifactFromWire(artifact: WireArtifact): Artifact {
  const name = optionalString(artifact.name);
  const metadata = structFromWire(artifact.metadata);
  return { ...(name ? { name } : {}), parts: artifact.parts.map(partFromWire), ...(metadata ? { metadata } : {}) };
}
