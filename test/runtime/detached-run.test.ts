import { describe, expect, it, vi } from "vitest";
import {
  backgroundDone,
  deferred,
  drain,
  expectAgentError,
  expectThrowsAgentError,
  gatedAgent,
  harness,
  historyOf,
  register,
  Rendezvous,
  replyTurn,
} from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import type { BackgroundFinishedEvent, TurnEvent } from "../../src/runtime/invocations/runtime-events.js";
import type { RecordMutator, SnapshotRecord, StoreCallContext } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { ledgerOnlyStore } from "../fixtures/ledger-only-store.js";

vi.setConfig({ testTimeout: 5_000 });

describe("DetachedRun", () => {
  it("answers detach at once with a pending snapshot chained off the last committed turn", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const first = await agent.runText("one");
    const connection = await agent.connect({ sessionId: first.sessionId });
    connection.sendText("wait:two");
    await gate.reached("two");
    connection.detach();
    const output = await connection.output();
    expect(output).toEqual({
      sessionId: first.sessionId,
      snapshotId: expect.any(String),
      artifacts: [],
      finishReason: "detached",
    });
    const pending = (await h.store.getRecord(output.snapshotId!))!;
    expect(pending).toMatchObject({
      status: "pending",
      parentId: first.snapshotId,
      turnIndex: 1,
      sessionId: first.sessionId,
    });
    expect(pending.heartbeatAt).toEqual(expect.any(Number));
    expect(pending.checkpoint).toBeUndefined();
    expect(pending.delta).toBeUndefined();
    expect(pending.createdAt).toBeGreaterThan((await h.store.getRecord(first.snapshotId!))!.createdAt);
    expect((await h.store.getHead(first.sessionId))!.headSnapshotId).toBe(output.snapshotId);
    gate.release("two");
    await backgroundDone(h);
  });

  it("finishes the running and queued turns in the background and completes the row with the final state", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("wait:a");
    await gate.reached("a");
    connection.sendText("b");
    connection.send({ message: { role: "user", content: [{ text: "c" }] }, detach: true });
    const output = await connection.output();
    expect(await reading).toEqual({ chunks: [], error: undefined });
    gate.release("a");
    await backgroundDone(h);
    const row = (await h.store.getRecord(output.snapshotId!))!;
    expect(row).toMatchObject({ status: "completed", finishReason: "stop", turnIndex: 2 });
    expect(row.parentId).toBeUndefined();
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    expect(historyOf(snapshot.state)).toEqual([
      "user:wait:a",
      "model:reply: wait:a",
      "user:b",
      "model:reply: b",
      "user:c",
      "model:reply: c",
    ]);
    expect(await h.store.getHead(connection.sessionId)).toMatchObject({
      headSnapshotId: output.snapshotId,
      turnCount: 1,
    });
    expect((await h.store.getHead(connection.sessionId))!.lease).toBeUndefined();
  });

  it("lets the completed row be resumed, continuing after its last turn", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:x" }] }, detach: true });
    const output = await connection.output();
    await expectAgentError(agent.connect({ snapshotId: output.snapshotId! }), "FAILED_PRECONDITION", /is pending/);
    gate.release("x");
    await backgroundDone(h);
    const next = await agent.runText("next", { sessionId: output.sessionId });
    expect((await h.store.getRecord(next.snapshotId!))!).toMatchObject({ parentId: output.snapshotId, turnIndex: 1 });
  });

  it("ends the row failed with the turn's error, keeping the state and index of the last good turn", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.sendText("wait:a");
    await gate.reached("a");
    connection.sendText("fail here");
    connection.detach();
    const output = await connection.output();
    gate.release("a");
    await backgroundDone(h);
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    // The row describes the last good turn (index 0), whose state it keeps.
    expect(snapshot).toMatchObject({
      status: "failed",
      finishReason: "failed",
      turnIndex: 0,
      error: { status: "INTERNAL", message: "failed on fail here" },
    });
    expect(historyOf(snapshot.state)).toEqual(["user:wait:a", "model:reply: wait:a"]);
  });

  it("ends the row aborted (not failed) when the work ends with an ABORTED error", async () => {
    const h = harness();
    const agent = gatedAgent(h, new Rendezvous());
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "abort" }] }, detach: true });
    const output = await connection.output();
    await backgroundDone(h);
    const row = (await h.store.getRecord(output.snapshotId!))!;
    expect(row).toMatchObject({ status: "aborted", finishReason: "aborted" });
    expect(row.error).toBeUndefined();
  });

  it("cancels the work when the pending snapshot is aborted; the row ends aborted, the abort reported", async () => {
    const observed = deferred<{ snapshotId: string }>();
    const finished: BackgroundFinishedEvent[] = [];
    const h = harness({
      events: { abortObserved: (e) => observed.resolve(e), backgroundFinished: (e) => finished.push(e) },
    });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("a");
    expect(await agent.abort(output.snapshotId!)).toBe("aborted");
    await gate.reached("a aborted:ABORTED");
    expect((await observed.promise).snapshotId).toBe(output.snapshotId);
    await backgroundDone(h);
    expect((await h.store.getRecord(output.snapshotId!))!).toMatchObject({
      status: "aborted",
      finishReason: "aborted",
    });
    expect(finished).toEqual([
      { agent: "bg", sessionId: output.sessionId, snapshotId: output.snapshotId, status: "aborted" },
    ]);
    expect((await h.store.getHead(output.sessionId))!.lease).toBeUndefined();
  });

  it("ignores the caller's signal once detached: the work completes", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const call = new AbortController();
    const connection = await agent.connect({}, { signal: call.signal });
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("a");
    call.abort();
    gate.release("a");
    await backgroundDone(h);
    expect((await h.store.getRecord(output.snapshotId!))!.status).toBe("completed");
  });

  it("reports turns run after detach as detached, without a snapshot of their own", async () => {
    const turns: TurnEvent[] = [];
    const h = harness({ events: { turn: (e) => turns.push(e) } });
    const agent = gatedAgent(h, new Rendezvous());
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "x" }] }, detach: true });
    await connection.output();
    await backgroundDone(h);
    expect(turns).toEqual([
      {
        agent: "bg",
        sessionId: connection.sessionId,
        turnIndex: 0,
        finishReason: "stop",
        detached: true,
        durationMs: expect.any(Number),
      },
    ]);
  });

  it("refuses a second detach: input is closed once detached", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    expectThrowsAgentError(() => connection.detach(), "FAILED_PRECONDITION");
    gate.release("a");
    await connection.output();
    await backgroundDone(h);
  });

  it("refuses detach on a store without status subscription (FAILED_PRECONDITION); the call goes on", async () => {
    const memory = new InMemorySessionStore();
    const store = ledgerOnlyStore(memory);
    const registry = new AgentRegistry();
    const agent = register(registry, { name: "plain", store, turn: replyTurn });
    const connection = await agent.connect();
    expectThrowsAgentError(
      () => connection.detach(),
      "FAILED_PRECONDITION",
      /cannot push status changes, so background work could not be aborted: detach needs a store with status subscription/,
    );
    connection.sendText("x");
    expect((await connection.output()).finishReason).toBe("stop");
  });

  it("leaves unfinished work pending at shutdown (never a false completed) and reports it pending", async () => {
    const finished: BackgroundFinishedEvent[] = [];
    const h = harness({ events: { backgroundFinished: (e) => finished.push(e) } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("a");
    expect(h.registry.background.size).toBe(1);
    expect(await h.registry.background.drain(0)).toBe(1);
    await gate.reached("a aborted:UNAVAILABLE");
    expect((await h.store.getRecord(output.snapshotId!))!.status).toBe("pending");
    expect(finished).toEqual([
      { agent: "bg", sessionId: output.sessionId, snapshotId: output.snapshotId, status: "pending" },
    ]);
    expect(h.registry.background.size).toBe(0);
  });

  it("leaves a row another writer finalized meanwhile as it is, and reports that status", async () => {
    const finished: BackgroundFinishedEvent[] = [];
    const h = harness({ events: { backgroundFinished: (e) => finished.push(e) } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("a");
    await h.store.updateRecord(output.snapshotId!, (r) => ({ ...r, status: "failed", finishReason: "failed" }));
    gate.release("a");
    await backgroundDone(h);
    expect((await h.store.getRecord(output.snapshotId!))!).toMatchObject({ status: "failed", finishReason: "failed" });
    expect(finished.map((e) => e.status)).toEqual(["failed"]);
  });

  it("fails the run (RESOURCE_EXHAUSTED) when its final state is over the size cap, keeping the parent's", async () => {
    const h = harness({ sessions: { maxSessionBytes: 2_000 } });
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const first = await agent.runText("small");
    const connection = await agent.connect({ sessionId: first.sessionId });
    connection.send({ message: { role: "user", content: [{ text: "x".repeat(3_000) }] }, detach: true });
    const output = await connection.output();
    await backgroundDone(h);
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    expect(snapshot).toMatchObject({ status: "failed", error: { status: "RESOURCE_EXHAUSTED" } });
    expect(snapshot.error!.message).toMatch(/over the limit of 2000/);
    expect(historyOf(snapshot.state)).toEqual(["user:small", "model:reply: small"]);
  });

  it("refreshes the pending row's heartbeat while the work runs", async () => {
    const beats = deferred<number>();
    class BeatingStore extends InMemorySessionStore {
      override async updateRecord(
        id: string,
        mutator: RecordMutator,
        ctx?: StoreCallContext,
      ): Promise<SnapshotRecord | null> {
        const before = (await this.getRecord(id))?.heartbeatAt;
        const row = await super.updateRecord(id, mutator, ctx);
        if (row?.status === "pending" && row.heartbeatAt !== before) beats.resolve(row.heartbeatAt!);
        return row;
      }
    }
    const store = new BeatingStore();
    const registry = new AgentRegistry({ defaultStore: store, liveness: { heartbeatIntervalMs: 5 } });
    const gate = new Rendezvous();
    const agent = gatedAgent({ store, registry }, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    const output = await connection.output();
    const written = (await store.getRecord(output.snapshotId!))!.heartbeatAt!;
    expect(await beats.promise).toBeGreaterThanOrEqual(written);
    gate.release("a");
    expect(await registry.background.drain(4_000)).toBe(0);
  });

  it("fails the invocation and cancels the work when the pending row cannot be written", async () => {
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
    const agent = gatedAgent({ store, registry }, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:a" }] }, detach: true });
    await expectAgentError(connection.output(), "UNAVAILABLE", /disk full/);
    await gate.reached("a aborted:UNAVAILABLE");
    expect(await registry.background.drain(4_000)).toBe(0);
    expect(store.sizes().records).toBe(0);
  });
});
