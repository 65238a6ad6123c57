import { afterEach, describe, expect, it, vi } from "vitest";
import { appendRecord, expectAgentError, harness, historyOf, register, replyTurn } from "./runtime-fixtures.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import { abortIfPending } from "../../src/runtime/sessions/snapshot-access.js";
import type { AgentInput } from "../../src/types/agent-io.js";
import { userText } from "../../src/types/content.js";
import type { DetachedWork } from "../../src/types/detached-work.js";
import type { PendingInput, SnapshotStatus } from "../../src/types/snapshot.js";
import type { SnapshotRecord } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { ledgerOnlyStore } from "../fixtures/ledger-only-store.js";

vi.setConfig({ testTimeout: 5_000 });
afterEach(() => {
  vi.useRealTimers();
});

/**
 * The heartbeat TTL of the tests on real time: a fresh row must still read
 * pending when it is read, however slow a loaded machine is in between; a
 * stale one is written as stale (its heartbeat long past), not waited for.
 */
const TTL_MS = 60_000;

/** A registry with server-managed agent "a" and client-managed agent "c". */
function setup(liveness?: { heartbeatIntervalMs?: number; heartbeatTtlMs?: number }) {
  const h = harness(liveness ? { liveness } : {});
  const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
  const client = register(h.registry, { name: "c", turn: replyTurn });
  return { ...h, agent, client };
}

/** An agent on a store without status subscription. */
function plainStoreAgent() {
  const memory = new InMemorySessionStore();
  const store = ledgerOnlyStore(memory);
  return register(new AgentRegistry(), { name: "plain", store, turn: replyTurn });
}

/** Collects what a watch yields, or the error it ends with. */
async function collect(
  watch: AsyncGenerator<SnapshotStatus>,
): Promise<{ statuses: SnapshotStatus[]; error?: unknown }> {
  const statuses: SnapshotStatus[] = [];
  try {
    for await (const status of watch) statuses.push(status);
    return { statuses };
  } catch (error) {
    return { statuses, error };
  }
}

describe("getSnapshot", () => {
  it("returns a completed snapshot with its metadata and state", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one");
    const two = await agent.runText("two", { sessionId: one.sessionId });
    const record = (await store.getRecord(two.snapshotId!))!;
    const snapshot = await agent.getSnapshot({ snapshotId: two.snapshotId! });
    expect(snapshot).toStrictEqual({
      snapshotId: two.snapshotId,
      sessionId: one.sessionId,
      parentId: one.snapshotId,
      turnIndex: 1,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      status: "completed",
      finishReason: "stop",
      state: { sessionId: one.sessionId, messages: expect.any(Array), artifacts: [] },
    });
    expect(historyOf(snapshot.state)).toEqual(["user:one", "model:reply: one", "user:two", "model:reply: two"]);
  });

  it("carries the turn's token usage as a copy", async () => {
    const { registry, store } = harness();
    const agent = register(registry, {
      name: "m",
      store: "default",
      turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
    });
    const out = await agent.runText("hello there");
    const snapshot = await agent.getSnapshot({ snapshotId: out.snapshotId! });
    expect(snapshot.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
    expect(snapshot.usage).not.toBe((await store.getRecord(out.snapshotId!))!.usage);
  });

  it("leaves the state out when the state transform omits it (returns null)", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "hidden",
      store: "default",
      transforms: { state: () => null },
      turn: replyTurn,
    });
    const out = await agent.runText("x");
    const snapshot = await agent.getSnapshot({ snapshotId: out.snapshotId! });
    expect("state" in snapshot).toBe(false);
    expect(snapshot.status).toBe("completed");
  });

  it("reads a session's head snapshot when given only the session ID", async () => {
    const { agent } = setup();
    const one = await agent.runText("one");
    const two = await agent.runText("two", { sessionId: one.sessionId });
    expect((await agent.getSnapshot({ sessionId: one.sessionId })).snapshotId).toBe(two.snapshotId);
  });

  it("requires a snapshot or session ID (INVALID_ARGUMENT)", async () => {
    const { agent } = setup();
    await expectAgentError(agent.getSnapshot({}), "INVALID_ARGUMENT", /set snapshot_id or session_id/);
  });

  it("refuses reads on a client-managed agent (FAILED_PRECONDITION)", async () => {
    const { client } = setup();
    await expectAgentError(client.getSnapshot({ sessionId: "s" }), "FAILED_PRECONDITION", /client-managed/);
    await expectAgentError(client.listSnapshots("s"), "FAILED_PRECONDITION", /client-managed/);
  });

  it("answers NOT_FOUND for unknown IDs and for another owner's snapshot", async () => {
    const { agent } = setup();
    const output = await agent.runText("x", {}, { storeContext: { tenant: "t1" } });
    await expectAgentError(agent.getSnapshot({ snapshotId: "nope" }), "NOT_FOUND");
    await expectAgentError(agent.getSnapshot({ sessionId: "nope" }), "NOT_FOUND");
    await expectAgentError(agent.getSnapshot({ snapshotId: output.snapshotId! }), "NOT_FOUND");
    await expectAgentError(
      agent.getSnapshot({ sessionId: output.sessionId }, { storeContext: { tenant: "t2" } }),
      "NOT_FOUND",
    );
    expect(
      (await agent.getSnapshot({ snapshotId: output.snapshotId! }, { storeContext: { tenant: "t1" } })).status,
    ).toBe("completed");
  });

  it("reports DATA_LOSS when the session's head points at a missing record", async () => {
    const { store, agent } = setup();
    await store.commit({
      expectedVersion: 0,
      head: { sessionId: "s", agent: "a", owner: "", headSnapshotId: "gone", turnCount: 1, createdAt: 1, updatedAt: 1 },
    });
    await expectAgentError(
      agent.getSnapshot({ sessionId: "s" }),
      "DATA_LOSS",
      /points at snapshot "gone", which is missing/,
    );
  });

  it("shows a pending row without state, with its heartbeat; a stale heartbeat reads as expired", async () => {
    const { store, agent } = setup({ heartbeatTtlMs: TTL_MS });
    const one = await agent.runText("one");
    const now = Date.now();
    const alive = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: now });
    const snapshot = await agent.getSnapshot({ snapshotId: alive });
    expect(snapshot).toMatchObject({ status: "pending", heartbeatAt: now, parentId: one.snapshotId });
    expect(snapshot.state).toBeUndefined();
    const dead = await appendRecord(store, one.sessionId, {
      status: "pending",
      turnIndex: 2,
      heartbeatAt: now - 5 * TTL_MS,
    });
    expect((await agent.getSnapshot({ snapshotId: dead })).status).toBe("expired");
  });

  it("shows a pending row's work inputs in order, marking the completed ones; none once terminal or transformed", async () => {
    const work = (inputs: AgentInput[], completed: number): DetachedWork => ({
      inputs,
      firstTurnIndex: 1,
      completed,
      lastSequence: 0,
      runs: [],
      principal: { subject: "anonymous", tenant: "", claims: {} },
    });
    const inputs: AgentInput[] = [
      { message: userText("first"), requestId: "r1" },
      { resume: { respond: [{ toolResponse: { ref: "t1", name: "lookup", output: { ok: true } } }] } },
      { message: userText("third"), detach: true },
    ];
    const { store, agent, registry } = setup({ heartbeatTtlMs: TTL_MS });
    const one = await agent.runText("one");
    const fields = { status: "pending" as const, turnIndex: 1, heartbeatAt: Date.now(), work: work(inputs, 1) };
    const pending = await appendRecord(store, one.sessionId, fields);
    const expected: PendingInput[] = [
      { message: userText("first"), requestId: "r1", completed: true },
      { resume: inputs[1]!.resume!, completed: false },
      { message: userText("third"), completed: false },
    ];
    expect((await agent.getSnapshot({ snapshotId: pending })).pendingInputs).toEqual(expected);
    const page = await agent.listSnapshots(one.sessionId, {});
    expect(page.snapshots.find((s) => s.snapshotId === pending)?.pendingInputs).toEqual(expected);
    expect((await agent.getSnapshot({ snapshotId: one.snapshotId! })).pendingInputs).toBeUndefined();
    await agent.abort(pending);
    expect((await agent.getSnapshot({ snapshotId: pending })).pendingInputs).toBeUndefined();

    const hidden = register(registry, {
      name: "hidden-inputs",
      store: "default",
      transforms: { state: (state) => state },
      turn: replyTurn,
    });
    const two = await hidden.runText("two");
    const transformed = await appendRecord(store, two.sessionId, { ...fields, work: work(inputs, 0) });
    expect((await hidden.getSnapshot({ snapshotId: transformed })).pendingInputs).toBeUndefined();
  });

  it("judges a pending row without heartbeat by its last update", async () => {
    const { store, agent } = setup({ heartbeatTtlMs: TTL_MS });
    const one = await agent.runText("one");
    const fresh = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, updatedAt: Date.now() });
    const updatedAt = Date.now() - 5 * TTL_MS;
    const stale = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 2, updatedAt });
    expect((await agent.getSnapshot({ snapshotId: fresh })).status).toBe("pending");
    expect((await agent.getSnapshot({ snapshotId: stale })).status).toBe("expired");
  });

  it("carries a failed snapshot's error", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "failed", turnIndex: 1 });
    await store.updateRecord(id, (r) => ({
      ...r,
      finishReason: "failed",
      error: { status: "INTERNAL", message: "x" },
    }));
    expect(await agent.getSnapshot({ snapshotId: id })).toMatchObject({
      status: "failed",
      finishReason: "failed",
      error: { status: "INTERNAL", message: "x" },
    });
  });
});

describe("listSnapshots", () => {
  it("pages a session's snapshots newest first, without state unless asked", async () => {
    const { agent } = setup();
    const one = await agent.runText("one");
    const two = await agent.runText("two", { sessionId: one.sessionId });
    const three = await agent.runText("three", { sessionId: one.sessionId });
    const first = await agent.listSnapshots(one.sessionId, { pageSize: 2 });
    expect(first.snapshots.map((s) => s.snapshotId)).toEqual([three.snapshotId, two.snapshotId]);
    expect(first.snapshots.every((s) => s.state === undefined)).toBe(true);
    expect(first.nextPageToken).toEqual(expect.any(String));
    const second = await agent.listSnapshots(one.sessionId, {
      pageSize: 2,
      pageToken: first.nextPageToken!,
      includeState: true,
    });
    expect(second.snapshots.map((s) => s.snapshotId)).toEqual([one.snapshotId]);
    expect(historyOf(second.snapshots[0]!.state)).toEqual(["user:one", "model:reply: one"]);
    expect("nextPageToken" in second).toBe(false);
  });

  it("refuses an empty session ID and a negative page size (INVALID_ARGUMENT)", async () => {
    const { agent } = setup();
    const one = await agent.runText("one");
    await expectAgentError(agent.listSnapshots(""), "INVALID_ARGUMENT", /session_id is required/);
    await expectAgentError(
      agent.listSnapshots(one.sessionId, { pageSize: -1 }),
      "INVALID_ARGUMENT",
      /page_size must not be negative/,
    );
    expect((await agent.listSnapshots(one.sessionId, { pageSize: 0 })).snapshots).toHaveLength(1);
  });

  it("answers NOT_FOUND for an unknown session and for another agent's", async () => {
    const { registry, agent } = setup();
    const other = register(registry, { name: "b", store: "default", turn: replyTurn });
    const one = await agent.runText("one");
    await expectAgentError(agent.listSnapshots("nope"), "NOT_FOUND");
    await expectAgentError(other.listSnapshots(one.sessionId), "NOT_FOUND");
  });
});

describe("abort", () => {
  it("flips a pending snapshot to aborted", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now(),
      updatedAt: 1,
    });
    expect(await agent.abort(id)).toBe("aborted");
    const record = (await store.getRecord(id))!;
    expect(record).toMatchObject({ status: "aborted", finishReason: "aborted" });
    expect(record.updatedAt).toBeGreaterThan(1);
  });

  it("leaves a terminal snapshot as it is and reports its status", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one");
    const before = await store.getRecord(one.snapshotId!);
    expect(await agent.abort(one.snapshotId!)).toBe("completed");
    expect(await store.getRecord(one.snapshotId!)).toBe(before);
  });

  it("answers INVALID_ARGUMENT without an ID and NOT_FOUND for an unknown or foreign snapshot", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one", {}, { storeContext: { tenant: "t1" } });
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    await expectAgentError(agent.abort(""), "INVALID_ARGUMENT", /snapshot_id is required/);
    await expectAgentError(agent.abort("nope"), "NOT_FOUND");
    await expectAgentError(agent.abort(id), "NOT_FOUND");
    expect((await store.getRecord(id))!.status).toBe("pending");
  });

  it("is refused without a store or status subscription (FAILED_PRECONDITION)", async () => {
    const { client } = setup();
    await expectAgentError(client.abort("x"), "FAILED_PRECONDITION", /client-managed/);
    await expectAgentError(plainStoreAgent().abort("x"), "FAILED_PRECONDITION", /cannot push status changes/);
  });
});

describe("abortIfPending", () => {
  const record = (status: SnapshotRecord["status"]): SnapshotRecord => ({
    snapshotId: "s1",
    sessionId: "s",
    turnIndex: 0,
    createdAt: 1,
    updatedAt: 1,
    status,
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 0,
    checkpointTurn: 0,
  });

  it("turns a pending record into an aborted one, stamped now", () => {
    const before = Date.now();
    const next = abortIfPending(record("pending"))!;
    expect(next).toEqual({
      ...record("pending"),
      status: "aborted",
      finishReason: "aborted",
      updatedAt: expect.any(Number),
    });
    expect(next.updatedAt).toBeGreaterThanOrEqual(before);
  });

  it.each(["completed", "failed", "aborted"] as const)("skips the write (null) for a %s record", (status) => {
    expect(abortIfPending(record(status))).toBeNull();
  });
});

describe("watchSnapshot", () => {
  it("yields a terminal status once and ends", async () => {
    const { agent } = setup();
    const one = await agent.runText("one");
    expect(await collect(agent.watchSnapshot(one.snapshotId!, new AbortController().signal))).toEqual({
      statuses: ["completed"],
    });
  });

  it("yields pending, then each change without duplicates, and ends after the terminal one", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    const watch = agent.watchSnapshot(id, new AbortController().signal);
    expect((await watch.next()).value).toBe("pending");
    const rest = collect(watch);
    await store.updateRecord(id, (r) => ({ ...r, heartbeatAt: Date.now() })); // same status: not yielded
    await agent.abort(id);
    expect(await rest).toEqual({ statuses: ["aborted"] });
  });

  it("ends when the caller's signal aborts, at once rather than at its next re-check", async () => {
    const { store, agent } = setup({ heartbeatTtlMs: 3_600_000 }); // re-checks every 15 minutes
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    const call = new AbortController();
    const watch = agent.watchSnapshot(id, call.signal);
    expect((await watch.next()).value).toBe("pending");
    const rest = collect(watch);
    await new Promise((resolve) => setImmediate(resolve)); // the watch now waits for a status change
    call.abort();
    expect(await rest).toEqual({ statuses: [] });
    expect(store.subscriberCount).toBe(0);
  });

  it("lets go of its status subscription and its re-check timer when a status ends it", async () => {
    const { store, agent } = setup();
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const watch = agent.watchSnapshot(id, new AbortController().signal);
    expect((await watch.next()).value).toBe("pending");
    const rest = collect(watch);
    await vi.advanceTimersByTimeAsync(0);
    expect(vi.getTimerCount()).toBe(1);
    await agent.abort(id);
    expect(await rest).toEqual({ statuses: ["aborted"] });
    expect(vi.getTimerCount()).toBe(0);
    expect(store.subscriberCount).toBe(0);
  });

  it("re-reads a pending row every quarter of the heartbeat TTL, not more often", async () => {
    const { store, agent } = setup({ heartbeatTtlMs: 60_000 });
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const call = new AbortController();
    const watch = agent.watchSnapshot(id, call.signal);
    expect((await watch.next()).value).toBe("pending");
    const rest = collect(watch);
    const reads = vi.spyOn(store, "getRecord");
    await vi.advanceTimersByTimeAsync(14_000);
    expect(reads).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(reads).toHaveBeenCalledTimes(1);
    call.abort();
    await rest;
  });

  it("yields expired and ends when the pending row's heartbeat goes stale mid-watch", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { store, agent } = setup({ heartbeatTtlMs: 1_000 });
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    const result = collect(agent.watchSnapshot(id, new AbortController().signal));
    await vi.advanceTimersByTimeAsync(750); // three checks, still fresh
    await vi.advanceTimersByTimeAsync(500);
    expect(await result).toEqual({ statuses: ["pending", "expired"] });
    expect((await store.getRecord(id))!.status).toBe("pending");
  });

  it("fails NOT_FOUND when the row disappears from the store mid-watch", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { store, agent } = setup({ heartbeatTtlMs: 1_000 });
    const one = await agent.runText("one");
    const id = await appendRecord(store, one.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() });
    const result = collect(agent.watchSnapshot(id, new AbortController().signal));
    await vi.advanceTimersByTimeAsync(0);
    await store.deleteSession(one.sessionId);
    await vi.advanceTimersByTimeAsync(250);
    const { statuses, error } = await result;
    expect(statuses).toEqual(["pending"]);
    expect(error).toMatchObject({ status: "NOT_FOUND", message: expect.stringMatching(/no longer exists/) });
  });

  it("answers INVALID_ARGUMENT without ID, NOT_FOUND if unknown, FAILED_PRECONDITION unsubscribable", async () => {
    const { agent } = setup();
    const signal = new AbortController().signal;
    await expectAgentError(agent.watchSnapshot("", signal).next(), "INVALID_ARGUMENT", /snapshot_id is required/);
    await expectAgentError(agent.watchSnapshot("nope", signal).next(), "NOT_FOUND");
    await expectAgentError(
      plainStoreAgent().watchSnapshot("x", signal).next(),
      "FAILED_PRECONDITION",
      /cannot push status changes/,
    );
  });
});
