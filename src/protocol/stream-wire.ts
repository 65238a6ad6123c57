import { create } from "@bufbuild/protobuf";
import {
  AgentOutputSchema,
  AgentStreamChunkSchema,
  ModelChunkSchema,
  TakeoverSchema,
  TurnEndSchema,
  type AgentOutput as WireAgentOutput,
  type AgentStreamChunk as WireAgentStreamChunk,
  type ModelChunk as WireModelChunk,
  type TurnEnd as WireTurnEnd,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import type { AgentOutput, AgentStreamChunk, ModelChunk, TurnEnd } from "../types/agent-io.js";
import {
  artifactFromWire,
  artifactToWire,
  messageFromWire,
  messageToWire,
  partFromWire,
  partToWire,
} from "../codec/content-wire.js";
import { finishReasonFromWire, finishReasonToWire, roleFromWire, roleToWire } from "../codec/enum-wire.js";
import { optionalString } from "../codec/json-wire.js";
import { agentErrorFromWire, agentErrorToWire, sessionStateFromWire, sessionStateToWire } from "./state-wire.js";
import { inputAckFromWire, inputAckToWire } from "./input-ack-wire.js";
import { usageFieldFromWire, usageFieldToWire, usageToWire } from "./usage-wire.js";

import { patchOperationFromWire, patchOperationToWire } from "./patch-wire.js";

export { patchOperationFromWire, patchOperationToWire };

/** A model chunk as `agentd.v1.ModelChunk`. */
export function modelChunkToWire(chunk: ModelChunk): WireModelChunk {
  return create(ModelChunkSchema, {
    role: roleToWire(chunk.role),
    content: chunk.content.map(partToWire),
    index: chunk.index ?? 0,
  });
}

/** An `agentd.v1.ModelChunk` as a model chunk (ROLE_UNSPECIFIED reads as "model"). */
export function modelChunkFromWire(chunk: WireModelChunk): ModelChunk {
  return { role: roleFromWire(chunk.role, "model"), content: chunk.content.map(partFromWire), index: chunk.index };
}

/** A turn end as `agentd.v1.TurnEnd`. */
export function turnEndToWire(turnEnd: TurnEnd): WireTurnEnd {
  return create(TurnEndSchema, {
    snapshotId: turnEnd.snapshotId ?? "",
    finishReason: finishReasonToWire(turnEnd.finishReason),
    turnIndex: turnEnd.turnIndex,
    sessionId: turnEnd.sessionId,
    usage: turnEnd.usage ? usageToWire(turnEnd.usage) : undefined,
  });
}

/** An `agentd.v1.TurnEnd` as a turn end (FINISH_REASON_UNSPECIFIED reads as "unknown"). */
export function turnEndFromWire(turnEnd: WireTurnEnd): TurnEnd {
  const snapshotId = optionalString(turnEnd.snapshotId);
  return {
    ...(snapshotId ? { snapshotId } : {}),
    finishReason: finishReasonFromWire(turnEnd.finishReason) ?? "unknown",
    turnIndex: turnEnd.turnIndex,
    sessionId: turnEnd.sessionId,
    ...usageFieldFromWire(turnEnd.usage),
  };
}

/**
 * A stream chunk as `agentd.v1.AgentStreamChunk`; every field set on the chunk
 * is carried. (Every init object here has one shape whichever fields are set:
 * this runs for every chunk of every stream, and `create` stays fast on one shape.)
 */
export function streamChunkToWire(chunk: AgentStreamChunk): WireAgentStreamChunk {
  return create(AgentStreamChunkSchema, {
    modelChunk: chunk.modelChunk ? modelChunkToWire(chunk.modelChunk) : undefined,
    customPatch: chunk.customPatch ? chunk.customPatch.map(patchOperationToWire) : [],
    artifact: chunk.artifact ? artifactToWire(chunk.artifact) : undefined,
    turnEnd: chunk.turnEnd ? turnEndToWire(chunk.turnEnd) : undefined,
    takeover: chunk.takeover ? create(TakeoverSchema, chunk.takeover) : undefined,
    inputAck: chunk.inputAck ? inputAckToWire(chunk.inputAck) : undefined,
    sequence: chunk.sequence ?? 0,
  });
}

/** An `agentd.v1.AgentStreamChunk` as a stream chunk (an empty patch list and a 0 sequence are dropped). */
export function streamChunkFromWire(chunk: WireAgentStreamChunk): AgentStreamChunk {
  return {
    ...(chunk.modelChunk ? { modelChunk: modelChunkFromWire(chunk.modelChunk) } : {}),
    ...(chunk.customPatch.length ? { customPatch: chunk.customPatch.map(patchOperationFromWire) } : {}),
    ...(chunk.artifact ? { artifact: artifactFromWire(chunk.artifact) } : {}),
    ...(chunk.turnEnd ? { turnEnd: turnEndFromWire(chunk.turnEnd) } : {}),
    ...(chunk.takeover
      ? { takeover: { supersededAfter: chunk.takeover.supersededAfter, turnIndex: chunk.takeover.turnIndex } }
      : {}),
    ...(chunk.inputAck ? { inputAck: inputAckFromWire(chunk.inputAck) } : {}),
    ...(chunk.sequence ? { sequence: chunk.sequence } : {}),
  };
}

/** An invocation output as `agentd.v1.AgentOutput`. */
export function agentOutputToWire(output: AgentOutput): WireAgentOutput {
  return create(AgentOutputSchema, {
    sessionId: output.sessionId,
    snapshotId: output.snapshotId ?? "",
    ...(output.message ? { message: messageToWire(output.message) } : {}),
    artifacts: output.artifacts.map(artifactToWire),
    ...(output.state ? { state: sessionStateToWire(output.state) } : {}),
    finishReason: finishReasonToWire(output.finishReason),
    ...(output.error ? { error: agentErrorToWire(output.error) } : {}),
    ...usageFieldToWire(output.usage),
  });
}

/** An `agentd.v1.AgentOutput` as an invocation output (FINISH_REASON_UNSPECIFIED reads as "unknown"). */
export function agentOutputFromWire(output: WireAgentOutput): AgentOutput {
  const snapshotId = optionalString(output.snapshotId);
  return {
    sessionId: output.sessionId,
    ...(snapshotId ? { snapshotId } : {}),
    ...(output.message ? { message: messageFromWire(output.message, "model") } : {}),
    artifacts: output.artifacts.map(artifactFromWire),
    ...(output.state ? { state: sessionStateFromWire(output.state) } : {}),
    finishReason: finishReasonFromWire(output.finishReason) ?? "unknown",
    ...(output.error ? { error: agentErrorFromWire(output.error) } : {}),
    ...usageFieldFromWire(output.usage),
  };
}
