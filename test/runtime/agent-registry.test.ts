import { describe, expect, it } from "vitest";
import { expectThrowsAgentError, replyTurn } from "./runtime-fixtures.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { defineCustomAgent } from "../../src/runtime/agents/custom-agent.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import {
  DEFAULT_SESSION_SETTINGS,
  MAX_SESSION_TTL_MS,
  sessionSettings,
  validateTtl,
} from "../../src/runtime/sessions/session-settings.js";
import { TenantInputBudget } from "../../src/runtime/sessions/tenant-input-budget.js";

const echo = (name: string) => defineCustomAgent({ name, turn: (_input, ctx) => generateModelTurn(ctx, "echo") });

describe("AgentRegistry", () => {
  it("refuses a second agent with a name already registered (ALREADY_EXISTS naming it), keeping the first", () => {
    const registry = new AgentRegistry();
    const first = echo("twin");
    registry.register(first);
    expect(() => registry.register(echo("twin"))).toThrow(
      expect.objectContaining({ status: "ALREADY_EXISTS", message: expect.stringContaining('"twin"') }),
    );
    expect(registry.get("twin")).toBe(first);
    expect(registry.list()).toHaveLength(1);
  });

  it("answers an unknown name with NOT_FOUND listing the agents it has", () => {
    const registry = new AgentRegistry();
    expectThrowsAgentError(() => registry.get("b"), "NOT_FOUND", 'unknown agent "b"; available: (none)');
    registry.register(echo("a"));
    registry.register(echo("c"));
    expectThrowsAgentError(() => registry.get("b"), "NOT_FOUND", 'unknown agent "b"; available: a, c');
  });

  it("answers an empty name with INVALID_ARGUMENT", () => {
    expectThrowsAgentError(() => new AgentRegistry().get(""), "INVALID_ARGUMENT", "agent name is required");
  });

  it("sweeps the sessions of agents with their own store as well as the default store's, skipping client-managed agents", async () => {
    const own = new InMemorySessionStore();
    const registry = new AgentRegistry({ defaultStore: new InMemorySessionStore() as SessionStore });
    const agent = defineCustomAgent({ name: "own", store: own as SessionStore, turn: replyTurn });
    registry.register(agent);
    registry.register(defineCustomAgent({ name: "client-managed", turn: replyTurn }));
    const output = await agent.runText("x");
    const { version, ...head } = (await own.getHead(output.sessionId))!;
    await own.commit({ expectedVersion: version, head: { ...head, updatedAt: Date.now() - 10_000, ttlMs: 1_000 } });
    await expect(registry.lifecycle.sweepExpired()).resolves.toBe(1);
    expect(await own.getHead(output.sessionId)).toBeUndefined();
  });

  it("gives its echo model the configured delay before each chunk", async () => {
    const registry = new AgentRegistry({ echoDelayMs: 40 });
    const agent = echo("slow");
    registry.register(agent);
    const started = performance.now();
    await agent.runText("one two");
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
  });

  it("rejects invalid session settings with INVALID_ARGUMENT", () => {
    expect(() => new AgentRegistry({ sessions: { maxQueuedInputs: 0 } })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT" }),
    );
    expect(() => new AgentRegistry({ sessions: { claims: { leaseTtlMs: 1000, refreshMs: 2000 } } })).toThrow(
      /refreshMs/,
    );
  });
});

describe("sessionSettings", () => {
  it("is the defaults without options, with no session time-to-live", () => {
    const { tenantInputs, ...settings } = sessionSettings();
    expect(settings).toEqual(DEFAULT_SESSION_SETTINGS);
    // Each registry's own budget of waiting-input bytes per tenant (the defaults have none).
    expect(tenantInputs?.maxBytes).toBe(64 * 1024 * 1024);
    expect("sessionTtlMs" in settings).toBe(false);
    expect(DEFAULT_SESSION_SETTINGS).toMatchObject({ busyPolicy: "reject", maxQueuedInputs: 16 });
    expect(DEFAULT_SESSION_SETTINGS.records.maxSessionBytes).toBe(64 * 1024 * 1024);
  });

  it("overrides each field given and keeps the defaults of the others", () => {
    const settings = sessionSettings({
      busyPolicy: "enqueue",
      claims: { pollMs: 7 },
      checkpoints: { maxDepth: 3 },
      maxSessionBytes: 1_000,
      maxQueuedInputs: 2,
      maxBufferedChunks: 8,
      sessionTtlMs: 5_000,
      inputs: { maxSteersPerTurn: 4, maxTenantWaitingInputBytes: 0 },
    });
    expect(settings.tenantInputs?.maxBytes).toBe(0);
    expect(settings).toEqual({
      busyPolicy: "enqueue",
      claims: { ...DEFAULT_SESSION_SETTINGS.claims, pollMs: 7 },
      records: {
        checkpoints: { ...DEFAULT_SESSION_SETTINGS.records.checkpoints, maxDepth: 3 },
        maxSessionBytes: 1_000,
      },
      maxQueuedInputs: 2,
      maxBufferedChunks: 8,
      sessionTtlMs: 5_000,
      inputs: { ...DEFAULT_SESSION_SETTINGS.inputs, maxSteersPerTurn: 4, maxTenantWaitingInputBytes: 0 },
      tenantInputs: expect.any(TenantInputBudget),
    });
  });

  it("refuses an unknown busy policy (INVALID_ARGUMENT)", () => {
    expectThrowsAgentError(
      () => sessionSettings({ busyPolicy: "wait" as never }),
      "INVALID_ARGUMENT",
      /busyPolicy must be/,
    );
  });

  it.each([
    ["maxSessionBytes", { maxSessionBytes: 0 }],
    ["maxQueuedInputs", { maxQueuedInputs: 0 }],
    ["maxBufferedChunks", { maxBufferedChunks: 0 }],
    ["claims.leaseTtlMs", { claims: { leaseTtlMs: 0 } }],
    ["claims.refreshMs", { claims: { refreshMs: 0 } }],
    ["claims.pollMs", { claims: { pollMs: Number.NaN } }],
    ["claims.maxWaiters", { claims: { maxWaiters: -1 } }],
    ["checkpoints.maxDepth", { checkpoints: { maxDepth: 0.5 } }],
  ] as const)("refuses %s below 1 or not a number (INVALID_ARGUMENT naming it)", (name, options) => {
    expectThrowsAgentError(
      () => sessionSettings(options),
      "INVALID_ARGUMENT",
      new RegExp(`^${name.replace(".", "\\.")} must be a number >= 1`),
    );
  });

  it("accepts 1 as the smallest value of a positive setting", () => {
    expect(sessionSettings({ maxQueuedInputs: 1 }).maxQueuedInputs).toBe(1);
  });

  it("refuses a refresh interval not below the lease time-to-live (INVALID_ARGUMENT)", () => {
    expectThrowsAgentError(
      () => sessionSettings({ claims: { leaseTtlMs: 100, refreshMs: 100 } }),
      "INVALID_ARGUMENT",
      /refreshMs \(100\) must be below/,
    );
    expect(sessionSettings({ claims: { leaseTtlMs: 100, refreshMs: 99 } }).claims.refreshMs).toBe(99);
  });
});

describe("validateTtl", () => {
  it("accepts whole milliseconds from 1 ms to 10 years", () => {
    expect(validateTtl(1)).toBe(1);
    expect(validateTtl(MAX_SESSION_TTL_MS)).toBe(MAX_SESSION_TTL_MS);
    expect(MAX_SESSION_TTL_MS).toBe(10 * 365 * 24 * 3600 * 1000);
  });

  it.each([0, -5, 1.5, MAX_SESSION_TTL_MS + 1, Number.NaN])("refuses %s with INVALID_ARGUMENT", (ttl) => {
    expectThrowsAgentError(() => validateTtl(ttl), "INVALID_ARGUMENT", /between 1 ms and 10 years/);
  });

  it("is applied to the registry's default session time-to-live", () => {
    expectThrowsAgentError(() => new AgentRegistry({ sessions: { sessionTtlMs: 0 } }), "INVALID_ARGUMENT");
  });
});
