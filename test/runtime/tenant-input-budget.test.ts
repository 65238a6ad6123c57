import { describe, expect, it, vi } from "vitest";
import {
  backgroundDone,
  expectThrowsAgentError,
  gatedAgent,
  harness,
  Rendezvous,
  type Harness,
} from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import type { Agent } from "../../src/runtime/agents/agent.js";
import type { AgentConnection } from "../../src/runtime/agents/agent-connection.js";
import { inputBytes } from "../../src/runtime/invocations/input-bytes.js";
import { TenantInputBudget } from "../../src/runtime/sessions/tenant-input-budget.js";
import { inputLimits } from "../../src/runtime/sessions/input-limits.js";
import type { AgentInput } from "../../src/types/agent-io.js";
import type { Principal } from "../../src/types/principal.js";

vi.setConfig({ testTimeout: 5_000 });

// Issue 48: the bytes of waiting inputs one tenant holds across all its
// invocations (--tenant-max-waiting-input-bytes), charged when an input is
// admitted to wait and released when it runs, or when its invocation ends.

describe("TenantInputBudget", () => {
  it("charges a hold's bytes to its tenant, resizes them, and frees them all once on release", () => {
    const budget = new TenantInputBudget(100);
    const a1 = budget.hold("a");
    const a2 = budget.hold("a");
    const b = budget.hold("b");
    a1.admit(0, 60);
    a1.resize(60);
    a2.admit(0, 40);
    a2.resize(40);
    expect(budget.heldBy("a")).toBe(100);
    expectThrowsAgentError(() => a2.admit(40, 1), "RESOURCE_EXHAUSTED", "--tenant-max-waiting-input-bytes");
    b.admit(0, 100); // another tenant is unaffected
    a1.resize(10); // a1's inputs ran
    expect(budget.heldBy("a")).toBe(50);
    a2.admit(40, 50);
    a1.release();
    a1.release(); // idempotent
    a1.resize(99); // nothing after release
    expect(budget.heldBy("a")).toBe(40);
    a2.release();
    expect(budget.heldBy("a")).toBe(0);
    expect(budget.tenants).toBe(0); // idle tenants are forgotten
  });

  it("has no limit at 0, and refuses a negative or fractional limit with INVALID_ARGUMENT", () => {
    const hold = new TenantInputBudget(0).hold("a");
    hold.admit(0, Number.MAX_SAFE_INTEGER);
    expectThrowsAgentError(() => new TenantInputBudget(-1), "INVALID_ARGUMENT", ">= 0");
    expectThrowsAgentError(() => new TenantInputBudget(1.5), "INVALID_ARGUMENT", ">= 0");
    expect(inputLimits({ maxTenantWaitingInputBytes: 0 }).maxTenantWaitingInputBytes).toBe(0);
    expectThrowsAgentError(() => inputLimits({ maxTenantWaitingInputBytes: -1 }), "INVALID_ARGUMENT", ">= 0");
  });
});

const A: Principal = { subject: "alice", tenant: "a", claims: {} };
const B: Principal = { subject: "bob", tenant: "b", claims: {} };
/** Point `name` padded to 1,000 characters: an input waiting there holds about 1,000 bytes. */
const pad = (name: string): string => name.padEnd(1000, "-");
/** A turn input whose gated turn waits at point `pad(name)`. */
const waiting = (name: string): AgentInput => ({
  message: { role: "user", content: [{ text: `wait:${pad(name)}` }] },
});
/** Releases the padded points `names`. */
const release = (gate: Rendezvous, ...names: string[]): void => names.forEach((name) => gate.release(pad(name)));
const steer = (text: string): AgentInput => ({
  message: { role: "user", content: [{ text: text.padEnd(1000, ".") }] },
  steer: true,
});
const ONE = inputBytes(waiting("x"));

/** A gated agent on a registry whose tenants may each hold 2.5 inputs of ~1,000 bytes waiting. */
function setUp(): { h: Harness; gate: Rendezvous; agent: Agent<unknown> } {
  const h = harness({ sessions: { inputs: { maxTenantWaitingInputBytes: Math.floor(ONE * 2.5) } } });
  const gate = new Rendezvous();
  return { h, gate, agent: gatedAgent(h, gate) };
}

/** A connection of `principal` whose first turn runs and waits at `point`. */
async function running(
  agent: Agent<unknown>,
  gate: Rendezvous,
  principal: Principal,
  point: string,
): Promise<AgentConnection<unknown>> {
  const connection = await agent.connect({}, { principal });
  connection.sendText(`wait:${point}`);
  await gate.reached(point);
  return connection;
}

function refusal(send: () => void): AgentError | undefined {
  try {
    send();
    return undefined;
  } catch (err) {
    return AgentError.from(err);
  }
}

describe("the tenant budget of an agent's invocations", () => {
  it("charges queued inputs across a tenant's invocations, refuses past the budget naming the flag (the invocation goes on), and frees an input when it runs", async () => {
    const { gate, agent } = setUp();
    const first = await running(agent, gate, A, "a1");
    const second = await running(agent, gate, A, "a2");
    first.send(waiting("q1"));
    second.send(waiting("q2"));
    const refused = refusal(() => second.send(waiting("q3")));
    expect(refused?.status).toBe("RESOURCE_EXHAUSTED");
    expect(refused?.message).toMatch(/per tenant \(--tenant-max-waiting-input-bytes\)/);
    // Tenant b is unaffected.
    const other = await running(agent, gate, B, "b1");
    other.send(waiting("bq1"));
    other.send(waiting("bq2"));
    // first's queued input runs: its bytes are freed, and second may queue one more.
    gate.release("a1");
    await gate.reached(pad("q1"));
    second.send(waiting("q3"));
    expect(refusal(() => first.send(waiting("q4")))?.status).toBe("RESOURCE_EXHAUSTED");
    for (const point of ["a2", "b1"]) gate.release(point);
    release(gate, "q1", "q2", "q3", "bq1", "bq2");
    const outputs = await Promise.all([first.output(), second.output(), other.output()]);
    expect(outputs.map((o) => o.finishReason)).toEqual(["stop", "stop", "stop"]);
  });

  it("charges steers the running turn has not taken, and frees them when they run as turns", async () => {
    const { gate, agent } = setUp();
    const first = await running(agent, gate, A, "s1");
    first.send(steer("one"));
    first.send(steer("two"));
    const second = await running(agent, gate, A, "s2");
    expect(refusal(() => second.send(waiting("x")))?.message).toMatch(/--tenant-max-waiting-input-bytes/);
    gate.release("s1"); // the turn never takes its steers: they run as the next turns, then the input ends
    await first.output();
    second.send(waiting("x"));
    second.send(waiting("y"));
    gate.release("s2");
    release(gate, "x", "y");
    await second.output();
  });

  it("frees everything an invocation held when it ends with inputs still waiting: cancelled, or its client gone", async () => {
    const { gate, agent } = setUp();
    const cancelled = await running(agent, gate, A, "c1");
    cancelled.send(waiting("never1"));
    cancelled.send(waiting("never2"));
    const abort = new AbortController();
    const gone = await agent.connect({}, { principal: A, signal: abort.signal });
    expect(refusal(() => gone.send(waiting("g")))?.status).toBe("RESOURCE_EXHAUSTED");
    cancelled.cancel(new AgentError("CANCELLED", "the test ends it"));
    await expect(cancelled.output()).rejects.toMatchObject({ status: "CANCELLED" });
    gone.send(waiting("g")); // runs at once: it waits at g, nothing queued
    await gate.reached(pad("g"));
    gone.send(waiting("g1"));
    gone.send(waiting("g2"));
    abort.abort();
    await expect(gone.output()).rejects.toMatchObject({ status: "CANCELLED" });
    const fresh = await running(agent, gate, A, "f");
    fresh.send(waiting("f1"));
    fresh.send(waiting("f2"));
    gate.release("f");
    release(gate, "f1", "f2");
    await fresh.output();
  });

  it("charges steers sent to detached work (SendInvocationInput) and frees them when the work finishes", async () => {
    const { h, gate, agent } = setUp();
    const connection = await agent.connect({}, { principal: A });
    connection.send({ message: { role: "user", content: [{ text: "wait:d" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("d");
    expect(await agent.sendInput(output.snapshotId!, steer("one"), { principal: A })).toMatchObject({
      result: "steered",
    });
    await agent.sendInput(output.snapshotId!, steer("two"), { principal: A });
    const other = await running(agent, gate, A, "o");
    expect(refusal(() => other.send(waiting("x")))?.message).toMatch(/--tenant-max-waiting-input-bytes/);
    await expect(agent.sendInput(output.snapshotId!, steer("three"), { principal: A })).rejects.toMatchObject({
      status: "RESOURCE_EXHAUSTED",
    });
    gate.release("d"); // the steers run as turns, then the work finishes
    await backgroundDone(h);
    other.send(waiting("x"));
    other.send(waiting("y"));
    gate.release("o");
    release(gate, "x", "y");
    await other.output();
  });

  it("has no tenant bound at 0", async () => {
    const h = harness({ sessions: { inputs: { maxTenantWaitingInputBytes: 0 } } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await running(agent, gate, A, "z");
    for (let i = 0; i < 10; i++) connection.send(waiting(`z${i}`));
    connection.cancel(new AgentError("CANCELLED", "done"));
    await connection.output().catch(() => undefined);
  });
});
