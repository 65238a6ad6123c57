import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { agentInfoFromWire, agentInfoToWire } from "../../src/protocol/agent-info-wire.js";
import type { AgentDescriptor } from "../../src/types/agent-io.js";

describe("agent info wire", () => {
  it("sends a descriptor without a description as an empty one and reads it back as absent", () => {
    const agent: AgentDescriptor = { name: "echo", stateManagement: "server", abortable: false, stateSchema: {} };
    expect(agentInfoToWire(agent).description).toBe("");
    expect(agentInfoFromWire(agentInfoToWire(agent))).toStrictEqual(agent);
  });

  it("refuses a non-JSON state schema with INVALID_ARGUMENT naming the agent", () => {
    const agent: AgentDescriptor = {
      name: "odd",
      stateManagement: "server",
      abortable: false,
      stateSchema: { maximum: 1n },
    };
    const write = () => agentInfoToWire(agent);
    expect(write).toThrow(AgentError);
    expect(write).toThrow(/^state schema of agent "odd" is not JSON-serialisable: /);
  });
});
