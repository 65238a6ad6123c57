import { create } from "@bufbuild/protobuf";
import {
  AgentInitSchema,
  AgentInputSchema,
  ToolResumeSchema,
  type AgentInit as WireAgentInit,
  type AgentInput as WireAgentInput,
  type ToolResume as WireToolResume,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import {
  AgentErrorSchema,
  SessionStateSchema,
  type AgentError as WireAgentError,
  type SessionState as WireSessionState,
} from "../../gen/ts/agentd/v1/state_pb.js";
import type { AgentErrorData, StatusName } from "../errors/agent-error.js";
import type { AgentInput, ToolResume } from "../types/agent-io.js";
import type { AgentInit, SessionState } from "../types/session-state.js";
import {
  artifactFromWire,
  artifactToWire,
  messageFromWire,
  messageToWire,
  partFromWire,
  partToWire,
} from "../codec/content-wire.js";
import { busyPolicyFromWire, busyPolicyToWire } from "../codec/enum-wire.js";
import { durationFromMs, durationToMs } from "./session-wire.js";
import { optionalString, structFromWire, structToWire, valueFromWire, valueToWire } from "../codec/json-wire.js";
import { isStatusName } from "./status-codes.js";
import { patchFromWire, patchOperationToWire } from "./patch-wire.js";

/** A runtime session state as `agentd.v1.SessionState` (custom undefined → unset). */
export function sessionStateToWire(state: SessionState): WireSessionState {
  const custom = valueToWire(state.custom, "custom state");
  return create(SessionStateSchema, {
    sessionId: state.sessionId ?? "",
    messages: state.messages.map((m) => messageToWire(m)),
    artifacts: state.artifacts.map(artifactToWire),
    ...(custom ? { custom } : {}),
  });
}

/** An `agentd.v1.SessionState` as a runtime session state (empty session ID dropped). */
export function sessionStateFromWire(state: WireSessionState): SessionState {
  const sessionId = optionalString(state.sessionId);
  const custom = valueFromWire(state.custom);
  return {
    ...(sessionId ? { sessionId } : {}),
    messages: state.messages.map((m) => messageFromWire(m)),
    ...(custom !== undefined ? { custom } : {}),
    artifacts: state.artifacts.map(artifactFromWire),
  };
}

/** A runtime init plus the agent's name, as `agentd.v1.AgentInit`. */
export function agentInitToWire(agent: string, init: AgentInit = {}): WireAgentInit {
  return create(AgentInitSchema, {
    agent,
    sessionId: init.sessionId ?? "",
    snapshotId: init.snapshotId ?? "",
    ...(init.state ? { state: sessionStateToWire(init.state) } : {}),
    busyPolicy: busyPolicyToWire(init.busyPolicy),
    labels: { ...init.labels },
    ...(init.ttlMs !== undefined ? { ttl: durationFromMs(init.ttlMs) } : {}),
    statePatch: (init.statePatch ?? []).map(patchOperationToWire),
    messagesPatch: (init.messagesPatch ?? []).map(patchOperationToWire),
  });
}

/**
 * An `agentd.v1.AgentInit` split into the agent's name and the runtime init
 * (empty IDs and patches dropped). An unknown patch op is INVALID_ARGUMENT
 * naming it (`init.state_patch[2]: ...`).
 */
export function agentInitFromWire(init: WireAgentInit): { agent: string; init: AgentInit } {
  const sessionId = optionalString(init.sessionId);
  const snapshotId = optionalString(init.snapshotId);
  const busyPolicy = busyPolicyFromWire(init.busyPolicy);
  return {
    agent: init.agent,
    init: {
      ...(busyPolicy ? { busyPolicy } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(snapshotId ? { snapshotId } : {}),
      ...(init.state ? { state: sessionStateFromWire(init.state) } : {}),
      ...(Object.keys(init.labels).length > 0 ? { labels: { ...init.labels } } : {}),
      ...(init.ttl ? { ttlMs: durationToMs(init.ttl, "init.ttl") } : {}),
      ...(init.statePatch.length > 0 ? { statePatch: patchFromWire(init.statePatch, "init.state_patch") } : {}),
      ...(init.messagesPatch.length > 0
        ? { messagesPatch: patchFromWire(init.messagesPatch, "init.messages_patch") }
        : {}),
    },
  };
}

/** A runtime tool resume as `agentd.v1.ToolResume`. */
export function toolResumeToWire(resume: ToolResume): WireToolResume {
  return create(ToolResumeSchema, {
    respond: (resume.respond ?? []).map(partToWire),
    restart: (resume.restart ?? []).map(partToWire),
  });
}

/** An `agentd.v1.ToolResume` as a runtime tool resume (empty lists dropped). */
export function toolResumeFromWire(resume: WireToolResume): ToolResume {
  return {
    ...(resume.respond.length ? { respond: resume.respond.map(partFromWire) } : {}),
    ...(resume.restart.length ? { restart: resume.restart.map(partFromWire) } : {}),
  };
}

/** A runtime input as `agentd.v1.AgentInput`. */
export function agentInputToWire(input: AgentInput): WireAgentInput {
  return create(AgentInputSchema, {
    ...(input.message ? { message: messageToWire(input.message) } : {}),
    ...(input.resume ? { resume: toolResumeToWire(input.resume) } : {}),
    detach: input.detach ?? false,
    ...(input.requestId ? { requestId: input.requestId } : {}),
    cancel: input.cancel ?? false,
    steer: input.steer ?? false,
  });
}

/** An `agentd.v1.AgentInput` as a runtime input; an input message with ROLE_UNSPECIFIED is a user message. */
export function agentInputFromWire(input: WireAgentInput): AgentInput {
  return {
    ...(input.message ? { message: messageFromWire(input.message, "user") } : {}),
    ...(input.resume ? { resume: toolResumeFromWire(input.resume) } : {}),
    ...(input.detach ? { detach: true } : {}),
    ...(input.requestId ? { requestId: input.requestId } : {}),
    ...(input.cancel ? { cancel: true } : {}),
    ...(input.steer ? { steer: true } : {}),
  };
}

/** Structured error data as `agentd.v1.AgentError`. */
export function agentErrorToWire(error: AgentErrorData): WireAgentError {
  const details = structToWire(error.details, "error details");
  return create(AgentErrorSchema, { status: error.status, message: error.message, ...(details ? { details } : {}) });
}

/** An `agentd.v1.AgentError` as error data; a status that is not a gRPC status name reads as UNKNOWN. */
export function agentErrorFromWire(error: WireAgentError): AgentErrorData {
  const details = structFromWire(error.details);
  const status: StatusName = isStatusName(error.status) ? error.status : "UNKNOWN";
  return { status, message: error.message, ...(details ? { details } : {}) };
}
