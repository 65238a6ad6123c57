import { describe, expect, it } from "vitest";
import { AgentRegistry } from "../../src/runtime/agent-registry.js";
import { defineCustomAgent } from "../../src/runtime/custom-agent.js";
import { generateModelTurn } from "../../src/runtime/model-turn.js";

const echo = (name: string) => defineCustomAgent({ name, turn: (_input, ctx) => generateModelTurn(ctx, "echo") });

describe("AgentRegistry", () => {
  it("refuses a second agent with a name already registered (ALREADY_EXISTS naming it), keeping the first", () => {
    const registry = new AgentRegistry();
    const first = echo("twin");
    registry.register(first);
    expect(() => registry.register(echo("twin"))).toThrow(expect.objectContaining({ status: "ALREADY_EXISTS", message: expect.stringContaining('"twin"') }));
    expect(registry.get("twin")).toBe(first);
    expect(registry.list()).toHaveLength(1);
  });

  it("answers an unknown name with NOT_FOUND listing the agents it has", () => {
    const registry = new AgentRegistry();
    registry.register(echo("a"));
    expect(() => registry.get("b")).toThrow(expect.objectContaining({ status: "NOT_FOUND", message: expect.stringContaining("available: a") }));
  });

  it("rejects invalid session settings with INVALID_ARGUMENT", () => {
    expect(() => new AgentRegistry({ sessions: { maxQueuedInputs: 0 } })).toThrow(expect.objectContaining({ status: "INVALID_ARGUMENT" }));
    expect(() => new AgentRegistry({ sessions: { claims: { leaseTtlMs: 1000, refreshMs: 2000 } } })).toThrow(/refreshMs/);
  });
});
