// The life of a detached run beyond the happy path: detach inputs, what may still stop the
// background work (an interrupting invocation, the pending row's abort, shutdown) and what may
// not (a late cancel() or call abort), the heartbeat and the status subscription ending with the
// run, and the pending row's place in the chain.
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  gatedAgent,
  harness,
  historyOf,
  register,
  Rendezvous,
  replyTurn,
  setLease,
  until,
} from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import type { AbortObservedEvent } from "../../src/runtime/invocations/runtime-events.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

vi.setConfig({ testTimeout: 5_000 });
afterEach(() => {
  vi.restoreAllMocks();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const detachText = (text: string) => ({ message: { role: "user" as const, content: [{ text }] }, detach: true });

describe("DetachedRun: inputs", () => {
  it("accepts a detach while the input queue is full", async () => {
    const h = harness({ sessions: { maxQueuedInputs: 1 } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.sendText("wait:a");
    await gate.reached("a");
    connection.sendText("b");
    connection.detach();
    const output = await connection.output();
    expect(output.finishReason).toBe("detached");
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    expect((await h.store.getRecord(output.snapshotId!))!).toMatchObject({ status: "completed", turnIndex: 1 });
  });

  it("runs no turn for a detach without a message: the row ends at the last turn sent", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.sendText("wait:a");
    await gate.reached("a");
    connection.detach();
    const output = await connection.output();
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    expect(snapshot).toMatchObject({ status: "completed", turnIndex: 0 });
    expect(historyOf(snapshot.state)).toEqual(["user:wait:a", "model:reply: wait:a"]);
  });
});

describe("DetachedRun: stopping the work", () => {
  it("cancels the background work when its session is lost to another process", async () => {
    const h = harness({ sessions: { claims: { refreshMs: 5 } } });
    const gate = new Rendezvous();
    const reasons = new Map<string, AgentError>();
    const agent = gatedAgent(h, gate, { reasons });
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    const output = await connection.output();
    await gate.reached("a");
    await setLease(h.store, output.sessionId, { invocationId: "elsewhere", expiresAt: Date.now() + 60_000 });
    await until(() => reasons.has("a"), "the background turn's cancellation");
    expect(reasons.get("a")).toMatchObject({ status: "ABORTED", message: expect.stringMatching(/lost session/) });
    expect(await h.registry.background.drain(4_000)).toBe(0);
  });

  it("leaves the background work running when cancel() comes after detach", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    const reason = new AgentError("CANCELLED", "client gone");
    connection.cancel(reason);
    await expect(connection.output()).rejects.toBe(reason);
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    const [row] = (await h.store.listRecords(connection.sessionId, { pageSize: 10 })).records;
    expect(row).toMatchObject({ status: "completed", turnIndex: 0 });
  });

  it("tells the work why it stops at shutdown", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const reasons = new Map<string, AgentError>();
    const agent = gatedAgent(h, gate, { reasons });
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    await connection.output();
    await gate.reached("a");
    expect(await h.registry.background.drain(0)).toBe(1);
    expect(reasons.get("a")).toMatchObject({ status: "UNAVAILABLE", message: "the server is shutting down" });
  });

  it("tells the work which snapshot was aborted", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const reasons = new Map<string, AgentError>();
    const agent = gatedAgent(h, gate, { reasons });
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    const output = await connection.output();
    await gate.reached("a");
    await agent.abort(output.snapshotId!);
    await gate.reached("a aborted");
    expect(reasons.get("a")).toMatchObject({
      status: "ABORTED",
      message: `snapshot "${output.snapshotId}" was aborted`,
    });
    expect(await h.registry.background.drain(4_000)).toBe(0);
  });

  it("stops watching the row once another writer finalized it: a later abort of it cancels nothing", async () => {
    const observed: AbortObservedEvent[] = [];
    const h = harness({ events: { abortObserved: (e) => observed.push(e) } });
    const gate = new Rendezvous();
    const reasons = new Map<string, AgentError>();
    const agent = gatedAgent(h, gate, { reasons });
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    const output = await connection.output();
    await gate.reached("a");
    await h.store.updateRecord(output.snapshotId!, (r) => ({ ...r, status: "failed", finishReason: "failed" }));
    await until(() => h.store.subscriberCount === 0, "the run to stop watching");
    await h.store.updateRecord(output.snapshotId!, (r) => ({ ...r, status: "aborted", finishReason: "aborted" }));
    await sleep(10);
    expect(reasons.has("a")).toBe(false);
    expect(observed).toEqual([]);
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
  });

  it("stops tracking the run as soon as its pending row cannot be written, though the work ignores the cancel", async () => {
    class RefusingStore extends InMemorySessionStore {
      override async commit(
        ...args: Parameters<InMemorySessionStore["commit"]>
      ): ReturnType<InMemorySessionStore["commit"]> {
        if (args[0].record?.status === "pending") throw new AgentError("UNAVAILABLE", "disk full");
        return super.commit(...args);
      }
    }
    const store = new RefusingStore();
    const registry = new AgentRegistry({ defaultStore: store });
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "stubborn",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at("turn"); // ignores the cancellation on purpose
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    connection.send(detachText("x"));
    await expect(connection.output()).rejects.toMatchObject({ status: "UNAVAILABLE" });
    try {
      await until(() => registry.background.size === 0, "the run to be untracked");
    } finally {
      gate.release("turn");
    }
  });
});

describe("DetachedRun: heartbeat and subscription", () => {
  it("stops the heartbeat when shutdown leaves the row pending, so the row can expire", async () => {
    const h = harness({ liveness: { heartbeatIntervalMs: 2 } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    const output = await connection.output();
    await gate.reached("a");
    expect(await h.registry.background.drain(0)).toBe(1);
    const { heartbeatAt } = (await h.store.getRecord(output.snapshotId!))!;
    await sleep(30);
    expect((await h.store.getRecord(output.snapshotId!))!).toMatchObject({ status: "pending", heartbeatAt });
  });

  it("ends its status subscription when shutdown leaves the row pending", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    await connection.output();
    await gate.reached("a");
    expect(h.store.subscriberCount).toBe(1);
    expect(await h.registry.background.drain(0)).toBe(1);
    expect(h.store.subscriberCount).toBe(0);
  });

  it("refreshes only a pending row: a row another writer finalized keeps its heartbeat", async () => {
    const h = harness({ liveness: { heartbeatIntervalMs: 2 } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    const output = await connection.output();
    await gate.reached("a");
    const finalized = await h.store.updateRecord(output.snapshotId!, (r) => ({
      ...r,
      status: "failed",
      finishReason: "failed",
    }));
    await sleep(30);
    expect((await h.store.getRecord(output.snapshotId!))!.heartbeatAt).toBe(finalized!.heartbeatAt);
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
  });

  it("does not keep the process alive with its heartbeat", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const liveTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = liveTimers();
    const connection = await agent.connect();
    connection.send(detachText("wait:a"));
    await connection.output();
    await gate.reached("a");
    expect(liveTimers()).toBe(before);
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
  });
});

describe("DetachedRun: the pending row", () => {
  it("is created after its parent even when the parent's clock ran ahead", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const future = Date.now() + 60_000;
    const clock = vi.spyOn(Date, "now").mockReturnValue(future);
    const first = await agent.runText("one");
    clock.mockRestore();
    const parent = (await h.store.getRecord(first.snapshotId!))!;
    expect(parent.createdAt).toBe(future);
    const connection = await agent.connect({ sessionId: first.sessionId });
    connection.send(detachText("wait:a"));
    const output = await connection.output();
    expect((await h.store.getRecord(output.snapshotId!))!.createdAt).toBe(future + 1);
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
  });
});
