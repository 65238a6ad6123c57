import { create } from "@bufbuild/protobuf";
import { AgentInfoSchema, type AgentInfo } from "../../gen/ts/agentd/v1/agent_pb.js";
import type { AgentDescriptor } from "../types/agent-io.js";
import { stateManagementFromWire, stateManagementToWire } from "../codec/enum-wire.js";
import { optionalString, structFromWire, structToWire } from "../codec/json-wire.js";

/** An agent descriptor as `agentd.v1.AgentInfo` (the JSON Schema travels as a Struct). */
export function agentInfoToWire(agent: AgentDescriptor): AgentInfo {
  return create(AgentInfoSchema, {
    name: agent.name,
    description: agent.description ?? "",
    stateManagement: stateManagementToWire(agent.stateManagement),
    abortable: agent.abortable,
    stateSchema: structToWire(agent.stateSchema, `state schema of agent "${agent.name}"`) ?? {},
  });
}

/** An `agentd.v1.AgentInfo` as an agent descriptor (STATE_MANAGEMENT_UNSPECIFIED reads as "server"). */
export function agentInfoFromWire(info: AgentInfo): AgentDescriptor {
  const description = optionalString(info.description);
  return {
    name: info.name,
    ...(description ? { description } : {}),
    stateManagement: stateManagementFromWire(info.stateManagement) ?? "server",
    abortable: info.abortable,
    stateSchema: structFromWire(info.stateSchema) ?? {},
  };
}
