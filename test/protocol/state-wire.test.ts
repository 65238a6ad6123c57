import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { AgentInitSchema, AgentInputSchema, BusyPolicy } from "../../gen/ts/agentd/v1/agent_pb.js";
import {
  agentErrorToWire,
  agentInitFromWire,
  agentInitToWire,
  agentInputFromWire,
  agentInputToWire,
  sessionStateFromWire,
  sessionStateToWire,
  toolResumeFromWire,
  toolResumeToWire,
} from "../../src/protocol/state-wire.js";
import type { AgentInit } from "../../src/types/session-state.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

describe("session state wire", () => {
  it("sends a state without a session ID as an empty ID and reads it back as absent", () => {
    const state = { messages: [], artifacts: [] };
    expect(sessionStateToWire(state).sessionId).toBe("");
    expect(sessionStateFromWire(sessionStateToWire(state))).toStrictEqual(state);
  });

  it("leaves custom state unset when there is none", () => {
    const state = { sessionId: "s", messages: [], artifacts: [] };
    expect(sessionStateToWire(state).custom).toBeUndefined();
    expect(sessionStateFromWire(sessionStateToWire(state))).toStrictEqual(state);
  });

  it("refuses non-JSON custom state with INVALID_ARGUMENT naming it", () => {
    const err = expectThrowsAgentError(
      () => sessionStateToWire({ messages: [], artifacts: [], custom: { n: 1n } }),
      "INVALID_ARGUMENT",
    );
    expect(err.message).toMatch(/^custom state is not JSON-serialisable: /);
  });
});

describe("agent init wire", () => {
  const init: AgentInit = {
    busyPolicy: "enqueue",
    sessionId: "s",
    labels: { team: "a", tier: "gold" },
    ttlMs: 3_600_500,
  };

  it("carries busy policy, labels and TTL", () => {
    const wire = agentInitToWire("tasks", init);
    expect(wire.busyPolicy).toBe(BusyPolicy.ENQUEUE);
    expect(wire.labels).toEqual({ team: "a", tier: "gold" });
    expect(wire.ttl?.seconds).toBe(3600n);
    expect(wire.ttl?.nanos).toBe(500_000_000);
  });

  it("round-trips busy policy, labels and TTL through binary", () => {
    const wire = fromBinary(AgentInitSchema, toBinary(AgentInitSchema, agentInitToWire("tasks", init)));
    expect(agentInitFromWire(wire)).toStrictEqual({ agent: "tasks", init });
  });

  it("omits empty labels, an unset TTL and an unspecified busy policy", () => {
    const wire = agentInitToWire("tasks", { labels: {} });
    expect(wire.ttl).toBeUndefined();
    expect(wire.busyPolicy).toBe(BusyPolicy.UNSPECIFIED);
    expect(agentInitFromWire(wire)).toStrictEqual({ agent: "tasks", init: {} });
  });

  it("refuses a negative TTL with INVALID_ARGUMENT naming init.ttl", () => {
    const wire = agentInitToWire("tasks");
    wire.ttl = create(DurationSchema, { seconds: -1n });
    const err = expectThrowsAgentError(() => agentInitFromWire(wire), "INVALID_ARGUMENT");
    expect(err.message).toBe("init.ttl must not be negative");
  });
});

describe("tool resume wire", () => {
  it("round-trips a resume that only responds", () => {
    const resume = { respond: [{ toolResponse: { ref: "1", name: "t", output: "ok" } }] };
    const wire = toolResumeToWire(resume);
    expect(wire.restart).toEqual([]);
    expect(toolResumeFromWire(wire)).toStrictEqual(resume);
  });

  it("round-trips a resume that only restarts", () => {
    const resume = { restart: [{ toolRequest: { ref: "2", name: "u" } }] };
    const wire = toolResumeToWire(resume);
    expect(wire.respond).toEqual([]);
    expect(toolResumeFromWire(wire)).toStrictEqual(resume);
  });
});

describe("agent input wire", () => {
  it("sends detach false when the input does not detach, and reads it back as absent", () => {
    const input = { message: { role: "user" as const, content: [{ text: "go" }] } };
    const wire = agentInputToWire(input);
    expect(wire.detach).toBe(false);
    expect(agentInputFromWire(fromBinary(AgentInputSchema, toBinary(AgentInputSchema, wire)))).toStrictEqual(input);
  });
});

describe("agent error wire", () => {
  it("refuses non-JSON error details with INVALID_ARGUMENT naming them", () => {
    const err = expectThrowsAgentError(
      () => agentErrorToWire({ status: "INTERNAL", message: "x", details: { n: 1n } }),
      "INVALID_ARGUMENT",
    );
    expect(err.message).toMatch(/^error details is not JSON-serialisable: /);
  });
});
