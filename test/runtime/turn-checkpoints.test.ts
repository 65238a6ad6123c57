import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { historyOf, register } from "./runtime-fixtures.js";
import { chunksOf, detachInputs, instances, labels, row, takeOverUntil, type Instance } from "./takeover-fixtures.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { ScriptedModel } from "../../src/models/scripted-model.js";
import { defineAgent } from "../../src/prompts/prompt-agent.js";
import { defineTool } from "../../src/tools/define-tool.js";
import type { Message } from "../../src/types/content.js";
import type { SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";

vi.setConfig({ testTimeout: 8_000 });

/**
 * Cuts `instance`'s detached work as a shutdown does. Code blocked at gate
 * `point` without a signal (a model script) is released once the cancel is
 * in (the drain's 0 ms timer fires before this 5 ms one), so it sees it.
 */
async function cut(instance: Instance, point: string): Promise<void> {
  const drained = instance.registry.background.drain(0);
  setTimeout(() => instance.gate.release(point), 5);
  expect(await drained).toBe(1);
}

/** Cuts A at `point` (as `cut`), then lets B take the work over past `point` until the row reads `status`. */
async function handOver(
  a: Instance,
  b: Instance,
  store: SessionStore,
  snapshotId: string,
  point: string,
  status: SnapshotRecord["status"],
): Promise<void> {
  await cut(a, point);
  b.gate.release(point);
  await takeOverUntil(b, store, snapshotId, status);
}

describe("checkpoints inside a turn (TurnContext.checkpoint)", () => {
  /** Step 1, a checkpoint, then step 2 after gate point "two"; a continued turn skips step 1. */
  function stepsAgent(steps: string[]) {
    return instances(["A", "B"], {
      define: (registry, gate, name) =>
        register(registry, {
          name: "steps",
          store: "default",
          turn: async (_input, ctx) => {
            if (!ctx.turn.continued) {
              steps.push(`step 1 on ${name}`);
              ctx.responder.sendModelChunk({ role: "model", content: [{ text: "step 1" }] });
              ctx.session.addMessages({ role: "model", content: [{ text: "step 1" }] });
              await ctx.turn.checkpoint?.();
            }
            await gate.at("two", ctx.turn.signal);
            steps.push(`step 2 on ${name}`);
            ctx.responder.sendModelChunk({ role: "model", content: [{ text: "step 2" }] });
            ctx.session.addMessages({ role: "model", content: [{ text: "step 2" }] });
          },
        }),
    });
  }

  it("a checkpoint in detached work records the turn so far in the row, marked in-turn, without counting the input as completed", async () => {
    const steps: string[] = [];
    const { store, all } = stepsAgent(steps);
    const [a] = all as [Instance];
    const { snapshotId } = await detachInputs(a, ["go"]);
    await a.gate.reached("two");
    const pending = await row(store, snapshotId);
    expect(pending.work).toMatchObject({ completed: 0, inTurn: true, lastSequence: 1 });
    expect(historyOf(await loadRecordState(store, pending))).toEqual(["user:go", "model:step 1"]);
    a.gate.release("two");
    await a.registry.background.drain(4_000);
    const done = await row(store, snapshotId);
    expect(done.work).toMatchObject({ completed: 1, lastSequence: 3 });
    expect(done.work!.inTurn).toBeUndefined();
  });

  it("a takeover continues a turn cut after a checkpoint from there: what ran before it does not run again", async () => {
    const steps: string[] = [];
    const { store, all } = stepsAgent(steps);
    const [a, b] = all as [Instance, Instance];
    const key = await detachInputs(a, ["go"]);
    await a.gate.reached("two");
    await handOver(a, b, store, key.snapshotId, "two", "completed");
    expect(steps).toEqual(["step 1 on A", "step 2 on B"]);
    const done = await b.agent.getSnapshot({ snapshotId: key.snapshotId });
    expect(historyOf(done.state)).toEqual(["user:go", "model:step 1", "model:step 2"]);
    expect(labels(await chunksOf(store, key))).toEqual([
      "text:step 1",
      "turnEnd:0:failed", // A's cut at shutdown: superseded
      "takeover:1:0",
      "text:step 2",
      "turnEnd:0:stop",
    ]);
  });

  it("a takeover restarts a turn cut before its first checkpoint from its start, not as a continued turn", async () => {
    const steps: string[] = [];
    const { store, all } = instances(["A", "B"], {
      define: (registry, gate, name) =>
        register(registry, {
          name: "steps",
          store: "default",
          turn: async (_input, ctx) => {
            await gate.at("one", ctx.turn.signal);
            steps.push(`step 1 on ${name}${ctx.turn.continued ? " (continued)" : ""}`);
            ctx.session.addMessages({ role: "model", content: [{ text: "step 1" }] });
            await ctx.turn.checkpoint?.();
          },
        }),
    });
    const [a, b] = all as [Instance, Instance];
    const key = await detachInputs(a, ["go"]);
    await a.gate.reached("one");
    await handOver(a, b, store, key.snapshotId, "one", "completed");
    expect(steps).toEqual(["step 1 on B"]);
    const done = await b.agent.getSnapshot({ snapshotId: key.snapshotId });
    expect(historyOf(done.state)).toEqual(["user:go", "model:step 1"]);
  });

  it("outside detached work a checkpoint writes nothing", async () => {
    const steps: string[] = [];
    const { store, all } = stepsAgent(steps);
    const [a] = all as [Instance];
    a.gate.release("two");
    const output = await a.agent.runText("go");
    expect(output.finishReason).toBe("stop");
    const page = await store.listRecords(output.sessionId, { pageSize: 10 });
    expect(page.records.map((r) => r.status)).toEqual(["completed"]);
  });
});

/**
 * Instances A and B with prompt agent "stamper" on a scripted model: its first call requests
 * tool `stamp` (which records where it ran); after a tool round it waits at gate point "answer",
 * then answers "stamped", or with `again` requests the tool once more.
 */
function stampers(options: { again?: boolean; maxToolIterations?: number } = {}) {
  const toolRuns: string[] = [];
  const modelCalls: { instance: string; messages: readonly Message[] }[] = [];
  const { store, all } = instances(["A", "B"], {
    define: (registry, gate, name) => {
      const stamp = defineTool({
        name: "stamp",
        description: "Stamps once; must not run twice.",
        inputSchema: z.object({}),
        run: () => {
          toolRuns.push(name);
          return { stamped: name };
        },
      });
      const model = new ScriptedModel(async (request) => {
        modelCalls.push({ instance: name, messages: request.messages });
        if (request.messages.at(-1)?.role !== "tool") return { toolRequests: [{ name: "stamp", input: {} }] };
        await gate.at("answer");
        return options.again ? { toolRequests: [{ name: "stamp", input: {} }] } : { text: "stamped" };
      });
      const agent = defineAgent({
        name: "stamper",
        model,
        store: "default",
        tools: [stamp],
        ...(options.maxToolIterations !== undefined ? { maxToolIterations: options.maxToolIterations } : {}),
      });
      registry.register(agent);
      return agent;
    },
  });
  return { store, all: all as [Instance, Instance], toolRuns, modelCalls };
}

describe("the tool loop checkpoints after each tool round", () => {
  it("a detached tool-using turn cut after its first tool round resumes on another instance without running that tool again", async () => {
    const { store, all, toolRuns, modelCalls } = stampers();
    const [a, b] = all;
    const key = await detachInputs(a, ["stamp it"]);
    await a.gate.reached("answer");
    expect((await row(store, key.snapshotId)).work).toMatchObject({ completed: 0, inTurn: true });
    await handOver(a, b, store, key.snapshotId, "answer", "completed");
    expect(toolRuns).toEqual(["A"]);
    expect(modelCalls.map((c) => [c.instance, c.messages.map((m) => m.role)])).toEqual([
      ["A", ["user"]],
      ["A", ["user", "model", "tool"]],
      ["B", ["user", "model", "tool"]],
    ]);
    const done = await b.agent.getSnapshot({ snapshotId: key.snapshotId });
    expect(done.state!.messages.map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
    expect(done.state!.messages.at(-1)!.content[0]!.text).toBe("stamped");
  });

  it("a continued turn counts the tool rounds it already did toward maxToolIterations", async () => {
    const { store, all, toolRuns } = stampers({ again: true, maxToolIterations: 1 });
    const [a, b] = all;
    const key = await detachInputs(a, ["stamp it"]);
    await a.gate.reached("answer");
    await handOver(a, b, store, key.snapshotId, "answer", "failed");
    expect(toolRuns).toEqual(["A"]);
    expect((await row(store, key.snapshotId)).error).toMatchObject({
      status: "RESOURCE_EXHAUSTED",
      message: expect.stringContaining("after 1 tool round(s) in this turn"),
    });
  });
});
