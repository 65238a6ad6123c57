import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { until } from "./runtime-fixtures.js";
import { detachInputs, instances, row, takeOverUntil, type Instance } from "./takeover-fixtures.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { ScriptedModel } from "../../src/models/scripted-model.js";
import { defineAgent } from "../../src/prompts/prompt-agent.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { toolCallEntryOf, type ToolSemantics } from "../../src/tools/tool-call-journal.js";
import { toolCallKey, turnIdentity } from "../../src/tools/tool-journal.js";
import type { Message } from "../../src/types/content.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import type { ToolResultJournal } from "../../stores/tool-result-journal.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { PostgresEngine } from "../../stores/sql/postgres-engine.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { freshSchema, postgresForTests, type PostgresServer } from "../harness/postgres-server.js";
import { registerInProcessTelemetry, type InProcessTelemetry } from "../telemetry/in-process-telemetry.js";

vi.setConfig({ testTimeout: 8_000 });

const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("tool-call idempotency keys", () => {
  const call = { sessionId: "s1", turn: "req:r1", round: 0, call: 0 };

  it("are UUIDs (v5 form), the same for the same call and different for any other call", () => {
    const key = toolCallKey(call);
    expect(key).toMatch(UUID_V5);
    expect(toolCallKey({ ...call })).toBe(key);
    const others = [
      { ...call, sessionId: "s2" },
      { ...call, turn: "req:r2" },
      { ...call, round: 1 },
      { ...call, call: 1 },
    ].map(toolCallKey);
    expect(new Set([key, ...others]).size).toBe(5);
  });

  it("a turn is identified by its request ID, else by the history it starts from", () => {
    const history: Message[] = [{ role: "user", content: [{ text: "book it" }] }];
    expect(turnIdentity("r1", history)).toBe("req:r1");
    const started = turnIdentity(undefined, history);
    expect(started).toMatch(/^history:[0-9a-f]{64}$/);
    // What the turn added after its user message does not change it; another start does.
    expect(turnIdentity(undefined, [...history, { role: "model", content: [{ text: "ok" }] }])).toBe(started);
    expect(turnIdentity(undefined, [{ role: "user", content: [{ text: "book another" }] }])).not.toBe(started);
  });
});

/** A tool call as the tools saw it start. */
interface Start {
  tool: string;
  key: string;
  on: string;
  resumed: boolean;
}

/**
 * Instances A and B with prompt agent "booker": its model requests `quick` and `slow` in one round,
 * then answers with the tool outputs it was given. `quick` answers at once; `slow` (declared
 * `slowSemantics`) waits at gate point "slow" on A only. Each tool records its start and key.
 */
function bookers(slowSemantics: ToolSemantics) {
  const starts: Start[] = [];
  const { store, all } = instances(["A", "B"], {
    define: (registry, gate, name) => {
      const record = (tool: string, ctx: { idempotencyKey: string; resumed?: unknown }) =>
        starts.push({ tool, key: ctx.idempotencyKey, on: name, resumed: ctx.resumed !== undefined });
      const quick = defineTool({
        name: "quick",
        description: "Answers at once.",
        inputSchema: z.object({}),
        run: (_input, ctx) => {
          record("quick", ctx);
          return { quick: name };
        },
      });
      const slow = defineTool({
        name: "slow",
        description: "Has an effect, slowly.",
        inputSchema: z.object({}),
        semantics: slowSemantics,
        run: async (_input, ctx) => {
          record("slow", ctx);
          if (name === "A") await gate.at("slow");
          return { slow: name };
        },
      });
      const model = new ScriptedModel((request) => {
        const last = request.messages.at(-1)!;
        if (last.role !== "tool") return { toolRequests: [{ name: "quick" }, { name: "slow" }] };
        return { text: last.content.map((p) => JSON.stringify(p.toolResponse?.output)).join(" ") };
      });
      const agent = defineAgent({ name: "booker", model, store: "default", tools: [quick, slow] });
      registry.register(agent);
      return agent;
    },
  });
  return { store, all: all as [Instance, Instance], starts };
}

/** The model message of the row's state that requested the tools. */
async function requestMessage(store: SessionStore, snapshotId: string): Promise<Message | undefined> {
  const state = await loadRecordState(store, await row(store, snapshotId));
  return state?.messages.find((m) => m.role === "model" && m.content.some((p) => p.toolRequest));
}

/** Detaches "book" on A, waits until `quick`'s result is journaled in the row while `slow` waits, then cuts A. */
async function cutWithQuickJournaled(
  a: Instance,
  store: SessionStore,
): Promise<{ sessionId: string; snapshotId: string }> {
  const key = await detachInputs(a, ["book"]);
  await a.gate.reached("slow");
  await until(
    async () => toolCallEntryOf((await requestMessage(store, key.snapshotId))?.content[0])?.endedAt !== undefined,
    "quick's result to be journaled",
  );
  const drained = a.registry.background.drain(0);
  // `slow` on A goes on once the cancel is in: its effect happens, its result is never journaled.
  setTimeout(() => a.gate.release("slow"), 5);
  expect(await drained).toBe(1);
  return key;
}

/** `agentd.tool.calls` as `<tool>:<outcome>` → count. */
async function toolCallCounts(telemetry: InProcessTelemetry): Promise<Record<string, unknown>> {
  const points = await telemetry.points("agentd.tool.calls");
  return Object.fromEntries(
    points.map((p) => [
      `${String(p.attributes["gen_ai.tool.name"])}:${String(p.attributes["agentd.tool.outcome"])}`,
      p.value,
    ]),
  );
}

describe("the tool-call journal in detached work", () => {
  let telemetry: InProcessTelemetry | undefined;
  afterEach(async () => {
    await telemetry?.stop();
    telemetry = undefined;
  });

  it("a takeover replays a journaled result instead of running the tool again, and re-invokes an unjournaled effect call with the same key", async () => {
    telemetry = registerInProcessTelemetry({ traces: false });
    const { store, all, starts } = bookers("effect");
    const [a, b] = all;
    const key = await cutWithQuickJournaled(a, store);
    await takeOverUntil(b, store, key.snapshotId, "completed");
    expect(await toolCallCounts(telemetry)).toMatchObject({ "quick:ran": 1, "quick:replayed": 1 });
    const quick = starts.filter((s) => s.tool === "quick");
    const slow = starts.filter((s) => s.tool === "slow");
    expect(quick.map((s) => s.on)).toEqual(["A"]);
    expect(slow.map((s) => s.on)).toEqual(["A", "B"]);
    expect(slow[1]!.key).toBe(slow[0]!.key);
    expect(quick[0]!.key).not.toBe(slow[0]!.key);
    const done = await b.agent.getSnapshot({ snapshotId: key.snapshotId });
    expect(done.state!.messages.at(-1)!.content[0]!.text).toBe('{"quick":"A"} {"slow":"B"}');
    const entries = done.state!.messages[1]!.content.map(toolCallEntryOf);
    expect(entries).toEqual([
      expect.objectContaining({ tool: "quick", key: quick[0]!.key, outcome: "replayed", endedAt: expect.any(Number) }),
      expect.objectContaining({ tool: "slow", key: slow[0]!.key, outcome: "ran", endedAt: expect.any(Number) }),
    ]);
    expect(entries.some((e) => e && "output" in e)).toBe(false); // the tool message holds the outputs
  });

  it("a never-repeat call that started without a journaled result is not re-invoked: the turn ends interrupted with neverRepeat.key, and a restart runs it with the same key", async () => {
    telemetry = registerInProcessTelemetry({ traces: false });
    const { store, all, starts } = bookers("never-repeat");
    const [a, b] = all;
    const key = await cutWithQuickJournaled(a, store);
    await takeOverUntil(b, store, key.snapshotId, "completed");
    expect(await toolCallCounts(telemetry)).toMatchObject({ "quick:replayed": 1, "slow:refused": 1 });
    expect((await row(store, key.snapshotId)).finishReason).toBe("interrupted");
    const slowKey = starts.find((s) => s.tool === "slow")!.key;
    expect(starts.map((s) => `${s.tool} on ${s.on}`)).toEqual(["quick on A", "slow on A"]);
    const done = await b.agent.getSnapshot({ snapshotId: key.snapshotId });
    const pending = done.state!.messages.at(-1)!;
    expect(pending.content.map((p) => p.metadata?.["interrupt"])).toEqual([
      undefined,
      { neverRepeat: { key: slowKey, tool: "slow", startedAt: expect.any(Number) } },
    ]);
    expect(pending.content[0]!.metadata?.["pendingOutput"]).toEqual({ quick: "A" });

    const resumed = await b.agent.run(
      { resume: { restart: [{ toolRequest: { name: "slow" } }] } },
      { sessionId: key.sessionId },
    );
    expect(resumed.finishReason).toBe("stop");
    expect(resumed.message?.content[0]?.text).toBe('{"quick":"A"} {"slow":"B"}');
    expect(starts.at(-1)).toEqual({ tool: "slow", key: slowKey, on: "B", resumed: true });
  });

  it("an idempotent call without a journaled result simply runs again", async () => {
    const { store, all, starts } = bookers("idempotent");
    const [a, b] = all;
    const key = await cutWithQuickJournaled(a, store);
    await takeOverUntil(b, store, key.snapshotId, "completed");
    expect(starts.map((s) => `${s.tool} on ${s.on}`)).toEqual(["quick on A", "slow on A", "slow on B"]);
    expect((await row(store, key.snapshotId)).finishReason).toBe("stop");
  });
});

describe("a client retry of a turn that failed after its tool ran (not detached)", () => {
  /**
   * Prompt agent "once" whose model requests `book` (semantics `semantics`) for a "book…" message,
   * then fails its next call the first time only. `book` throws on its first run when `toolFails`.
   */
  function failingAfterTool(semantics: ToolSemantics = "effect", toolFails = false) {
    const keys: string[] = [];
    let failures = 1;
    let toolFailures = toolFails ? 1 : 0;
    const book = defineTool({
      name: "book",
      description: "Books.",
      inputSchema: z.object({}),
      semantics,
      run: (_input, ctx) => {
        keys.push(ctx.idempotencyKey);
        if (toolFailures-- > 0) throw new Error("the booking API timed out");
        return { booked: keys.length };
      },
    });
    const model = new ScriptedModel((request) => {
      const last = request.messages.at(-1)!;
      if (last.role === "user")
        return last.content[0]!.text!.startsWith("book") ? { toolRequests: [{ name: "book" }] } : { text: "hi" };
      if (failures-- > 0) throw new Error("the provider is down");
      return { text: `booked ${JSON.stringify(last.content[0]!.toolResponse!.output)}` };
    });
    const { store, all } = instances(["A"], {
      define: (registry) => {
        const agent = defineAgent({ name: "once", model, store: "default", tools: [book] });
        registry.register(agent);
        return agent;
      },
    });
    return { agent: all[0]!.agent, keys, store };
  }

  const message = { role: "user" as const, content: [{ text: "book it" }] };

  it("replays the journaled result on a retry with the same request ID: the tool does not run again", async () => {
    const { agent, keys, store } = failingAfterTool();
    const session = await agent.runText("hello");
    const failed = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(failed.finishReason).toBe("failed");
    const retried = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(retried.finishReason).toBe("stop");
    expect(keys).toHaveLength(1);
    expect(retried.message?.content[0]!.text).toBe('booked {"booked":1}');
    const { messages } = (await loadRecordState(store, await row(store, retried.snapshotId!)))!;
    const request = messages.find((m) => m.role === "model" && m.content.some((p) => p.toolRequest))!;
    expect(toolCallEntryOf(request.content[0])).toMatchObject({ key: keys[0], outcome: "replayed" });
  });

  it("drops the turn's journal once the retry committed", async () => {
    const { agent, store } = failingAfterTool();
    const session = await agent.runText("hello");
    await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    const scope = { sessionId: session.sessionId, requestId: "r-1" };
    const journal = store as unknown as ToolResultJournal;
    // The booking's result, and the entry naming the input that ran it.
    expect((await journal.journaledToolCalls(scope)).map((c) => c.tool).sort()).toEqual(["agentd.input", "book"]);
    await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(await journal.journaledToolCalls(scope)).toEqual([]);
  });

  it("a retry that reuses the request ID for another input is INVALID_ARGUMENT and gets none of the first input's results", async () => {
    const { agent, keys, store } = failingAfterTool();
    const session = await agent.runText("hello");
    await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    const other = { role: "user" as const, content: [{ text: "book the other one" }] };
    const reused = await agent.run({ message: other, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(reused.finishReason).toBe("failed");
    expect(reused.error).toMatchObject({ status: "INVALID_ARGUMENT", message: expect.stringContaining('"r-1"') });
    expect(keys).toHaveLength(1); // the tool did not run for the other input either
    // The first input's retry still replays its result.
    const retried = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(retried.message?.content[0]!.text).toBe('booked {"booked":1}');
    expect(keys).toHaveLength(1);
    expect((await store.getHead(session.sessionId))?.turnCount).toBe(2);
  });

  it("a never-repeat tool whose call started without a journaled result is not run again: the retry ends interrupted", async () => {
    const { agent, keys, store } = failingAfterTool("never-repeat", true);
    const session = await agent.runText("hello");
    const failed = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(failed.finishReason).toBe("failed");
    const retried = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(retried.finishReason).toBe("interrupted");
    expect(keys).toHaveLength(1);
    const { messages } = (await loadRecordState(store, await row(store, retried.snapshotId!)))!;
    const pending = messages.at(-1)!.content[0]!;
    expect(pending.metadata?.["interrupt"]).toEqual({
      neverRepeat: { key: keys[0], tool: "book", startedAt: expect.any(Number) },
    });
  });

  it("without a request ID, a retry of the same message over the same history runs the tool again with the same key", async () => {
    const { agent, keys } = failingAfterTool();
    const session = await agent.runText("hello");
    expect((await agent.runText("book it", { sessionId: session.sessionId })).finishReason).toBe("failed");
    expect((await agent.runText("book it", { sessionId: session.sessionId })).finishReason).toBe("stop");
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    // A new turn books with a new key.
    await agent.runText("book again", { sessionId: session.sessionId });
    expect(keys).toHaveLength(3);
    expect(keys[2]).not.toBe(keys[0]);
  });
});

describe("a call to a tool the agent does not define", () => {
  /** Prompt agent "once" whose model calls `tool` (which it lacks) for "call…", then fails its next call the first time only. */
  function callingUnknown(tool: string, store?: SessionStore) {
    let failures = 1;
    const model = new ScriptedModel((request) => {
      const last = request.messages.at(-1)!;
      if (last.role === "user")
        return last.content[0]!.text!.startsWith("call") ? { toolRequests: [{ name: tool }] } : { text: "hi" };
      if (failures-- > 0) throw new Error("the provider is down");
      return { text: `told ${JSON.stringify(last.content[0]!.toolResponse!.output)}` };
    });
    const { all } = instances(["A"], {
      ...(store ? { store } : {}),
      define: (registry) => {
        const agent = defineAgent({ name: "once", model, store: "default", tools: [] });
        registry.register(agent);
        return agent;
      },
    });
    return all[0]!.agent;
  }
  const message = { role: "user" as const, content: [{ text: "call it" }] };

  it("is answered with the unknown-tool error, kept out of the store's journal, and answered the same way on a retry", async () => {
    const store = new InMemorySessionStore();
    const agent = callingUnknown("lookup", store);
    const session = await agent.runText("hello");
    const failed = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(failed.finishReason).toBe("failed");
    const scope = { sessionId: session.sessionId, requestId: "r-1" };
    expect(await store.journaledToolCalls(scope)).toEqual([]);
    const retried = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
    expect(retried.finishReason).toBe("stop");
    expect(retried.message?.content[0]!.text).toBe(
      'told {"error":"unknown tool \\"lookup\\"; available tools: (none)"}',
    );
  });

  describe("on PostgreSQL", () => {
    let release: (() => Promise<void>) | undefined;
    let server: PostgresServer;
    beforeAll(async () => {
      ({ server, release } = await postgresForTests());
    }, 120_000);
    afterAll(() => release?.());

    it("whose name holds NUL (which PostgreSQL text cannot) does not fail the turn", async () => {
      const schema = freshSchema();
      const store = new SqlSessionStore(
        new PostgresEngine({ connectionString: server.uri(), schema, description: server.uri(schema) }),
      );
      try {
        const agent = callingUnknown("look\u0000up", store);
        const session = await agent.runText("hello");
        await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
        const retried = await agent.run({ message, requestId: "r-1" }, { sessionId: session.sessionId });
        expect(retried.error).toBeUndefined();
        expect(retried.finishReason).toBe("stop");
        expect(retried.message?.content[0]!.text).toContain("unknown tool");
      } finally {
        await store.close();
      }
    });
  });
});
