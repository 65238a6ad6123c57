import { describe, expect, it, vi } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import { Rendezvous, expectAgentError, historyOf, until, recordsOf, setLease, gatedAgent } from "./runtime-fixtures.js";
import {
  ANN,
  chunksOf,
  detachInputs,
  detachThenShutDown,
  instances,
  labels,
  LIVENESS,
  presumeDead,
  presumeExpired,
  row,
  stalledAndSurvivor,
  stallPastTtl,
  takeOverUntil,
  type Instance,
} from "./takeover-fixtures.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import {
  startWorkTakeover,
  takeOverDeadWork,
  type TakeoverReport,
} from "../../src/runtime/background/work-takeover.js";
import { livenessRecheckMs } from "../../src/runtime/sessions/snapshot-liveness.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";

// A safety net for a loaded machine, not an expectation: a passing test ends at its events.
vi.setConfig({ testTimeout: 60_000 });

/**
 * Removes a file store's directory. The instances' background work (a detached run's last write,
 * a session lock let go on its idle tick) can still create a file under it while the recursive
 * removal runs, which then fails ENOTEMPTY: fs.rm retries that (and EBUSY) before giving up.
 */
const RM_TREE = { recursive: true, force: true, maxRetries: 10, retryDelay: 100 } as const;

const TEST_LIVENESS = { ...LIVENESS, chunkRetentionMs: 60_000 };

/** What a takeover pass of `instance` over `store` looks at. */
function sourceOf(instance: Instance, store: SessionStore) {
  return {
    stores: () => [store],
    agent: (name: string) => (name === "bg" ? instance.agent : undefined),
    liveness: TEST_LIVENESS,
  };
}

describe("detached work records what a takeover needs", () => {
  it("the pending row holds the running and queued inputs, their first turn index, the principal and the first run", async () => {
    const { store, all } = instances(["A"]);
    const [a] = all as [Instance];
    const connection = await a.agent.connect({}, { principal: ANN });
    connection.sendText("wait:one");
    await a.gate.reached("one");
    connection.sendText("two");
    connection.send({ message: { role: "user", content: [{ text: "three" }] }, detach: true });
    const output = await connection.output();
    const pending = await row(store, output.snapshotId!);
    const head = (await store.getHead(output.sessionId))!;
    expect(pending.work).toEqual({
      inputs: ["wait:one", "two", "three"].map((text) => ({ message: { role: "user", content: [{ text }] } })),
      firstTurnIndex: 0,
      completed: 0,
      lastSequence: 0,
      runs: [{ invocationId: head.lease!.invocationId, instance: "A", startedAt: expect.any(Number), fromInput: 0 }],
      principal: { subject: "ann", tenant: "", claims: { plan: "pro" } },
      initialState: { sessionId: output.sessionId, messages: [], artifacts: [] },
    });
    a.gate.release("one");
    await a.registry.background.drain(4_000);
  });

  it("after turns committed before detach, the inputs start at the next turn, the stream position is that turn's TurnEnd, and the row records no initial state", async () => {
    const { store, all } = instances(["A"]);
    const [a] = all as [Instance];
    const connection = await a.agent.connect();
    const stream = connection.stream[Symbol.asyncIterator]();
    connection.sendText("zero");
    while (!(await stream.next()).value?.turnEnd); // turn 0 committed (its model chunk, then its TurnEnd)
    connection.sendText("wait:one");
    await a.gate.reached("one");
    connection.detach();
    const output = await connection.output();
    const work = (await row(store, output.snapshotId!)).work!;
    expect(work.firstTurnIndex).toBe(1);
    expect(work.inputs).toHaveLength(1);
    expect(work.lastSequence).toBe(2); // the committed turn's TurnEnd (after its one model chunk)
    expect(work.initialState).toBeUndefined();
    a.gate.release("one");
    await a.registry.background.drain(4_000);
  });

  it("each detached turn that ends checkpoints the row: its state so far, its turn index, one more completed input and its TurnEnd's sequence; reads of the pending row still show no state", async () => {
    const { store, all } = instances(["A"]);
    const [a] = all as [Instance];
    const { sessionId, snapshotId } = await detachInputs(a, ["one", "two", "wait:three"]);
    await a.gate.reached("three");
    const pending = await row(store, snapshotId);
    expect(pending.work).toMatchObject({ completed: 2, lastSequence: 4 });
    expect(pending.status).toBe("pending");
    expect(pending.turnIndex).toBe(1); // the last completed turn
    expect(historyOf(await loadRecordState(store, pending))).toEqual([
      "user:one",
      "model:one by ann on A",
      "user:two",
      "model:two by ann on A",
    ]);
    expect(labels(await chunksOf(store, { sessionId, snapshotId }))).toEqual([
      "text:one by ann on A",
      "turnEnd:0:stop",
      "text:two by ann on A",
      "turnEnd:1:stop",
    ]);
    expect((await a.agent.getSnapshot({ snapshotId })).state).toBeUndefined();
    a.gate.release("three");
    await a.registry.background.drain(4_000);
    const done = await a.agent.getSnapshot({ snapshotId });
    expect(done.status).toBe("completed");
    expect(historyOf(done.state)).toEqual([
      "user:one",
      "model:one by ann on A",
      "user:two",
      "model:two by ann on A",
      "user:wait:three",
      "model:wait:three by ann on A",
    ]);
  });

  it("names the instance <hostname>:<pid> when the registry sets no instance ID", async () => {
    const store = new InMemorySessionStore();
    const registry = new AgentRegistry({ defaultStore: store as SessionStore });
    const gate = new Rendezvous();
    const agent = gatedAgent({ store, registry }, gate);
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "wait:one" }] }, detach: true });
    const output = await connection.output();
    expect((await row(store, output.snapshotId!)).work!.runs[0]!.instance).toBe(`${hostname()}:${process.pid}`);
    gate.release("one");
    await registry.background.drain(4_000);
  });
});

describe("taking over the detached work of a dead instance", () => {
  it("work left pending at shutdown is taken over by another instance: the remaining inputs run once each from the last completed turn, as the same principal, and the row completes", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const { sessionId, snapshotId } = await detachInputs(a, ["one", "wait:two", "three"]);
    await a.gate.reached("two");
    expect(await a.registry.background.drain(0)).toBe(1); // A goes away mid-turn: its row stays pending
    b.gate.release("two");
    await takeOverUntil(b, store, snapshotId, "completed");
    await b.registry.background.drain(4_000);
    const done = await b.agent.getSnapshot({ snapshotId });
    expect(historyOf(done.state)).toEqual([
      "user:one",
      "model:one by ann on A",
      "user:wait:two",
      "model:wait:two by ann on B",
      "user:three",
      "model:three by ann on B",
    ]);
    const final = await row(store, snapshotId);
    expect(final.turnIndex).toBe(2);
    expect(final.work!.runs.map((r) => [r.instance, r.fromInput])).toEqual([
      ["A", 0],
      ["B", 1],
    ]);
    expect(b.takenOver).toEqual([
      {
        agent: "bg",
        sessionId,
        snapshotId,
        from: "A",
        instance: "B",
        completedInputs: 1,
        remainingInputs: 2,
      },
    ]);
    expect((await store.getHead(sessionId))!.lease).toBeUndefined();
    expect(await recordsOf(store, sessionId)).toHaveLength(1);
    expect(b.principals.map((p) => [p.subject, p.tenant, p.claims])).toEqual([
      ["ann", "", { plan: "pro" }],
      ["ann", "", { plan: "pro" }],
    ]);
  });

  it("work detached after committed turns is taken over on top of them: the final row is their child and holds the whole history", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const first = await a.agent.runText("zero");
    const connection = await a.agent.connect({ sessionId: first.sessionId });
    connection.sendText("wait:one");
    await a.gate.reached("one");
    connection.detach();
    const { snapshotId } = await connection.output();
    await a.registry.background.drain(0);
    b.gate.release("one");
    await takeOverUntil(b, store, snapshotId!, "completed");
    await b.registry.background.drain(4_000);
    const final = await row(store, snapshotId!);
    expect(final.parentId).toBe(first.snapshotId);
    expect(final.turnIndex).toBe(1);
    const done = await b.agent.getSnapshot({ snapshotId: snapshotId! });
    expect(historyOf(done.state)).toEqual([
      "user:zero",
      "model:zero by anonymous on A",
      "user:wait:one",
      "model:wait:one by anonymous on B",
    ]);
  });

  it("reports each pass that took work over, and no pass that did not", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const { snapshotId } = await detachThenShutDown(a);
    b.gate.release("one");
    await presumeDead(store, snapshotId);
    const reports: TakeoverReport[] = [];
    let passes = 0;
    const source = sourceOf(b, store);
    // The poller of the registry, with passes every 10 ms instead of every quarter TTL (15 s here), counted.
    const stop = startWorkTakeover({ ...source, stores: () => (passes++, source.stores()) }, 10, (report) =>
      reports.push(report),
    );
    try {
      await until(async () => (await row(store, snapshotId)).status === "completed", "B to complete the work");
      const done = passes;
      await until(() => passes >= done + 3, "three more passes");
    } finally {
      await stop();
    }
    expect(reports).toEqual([{ takenOver: 1 }]);
  });

  it("a pass that cannot read a head's record still takes over the others, then rejects with that error (and the poller reports it)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-takeover-corrupt-"));
    const files = await openSqlStore(`sqlite:${join(dir, "agentd.db")}`);
    try {
      const [a] = instances(["A"], { store: files }).all as [Instance];
      const [b] = instances(["B"], { store: files }).all as [Instance];
      // A session whose head is leased and whose head record is corrupt (DATA_LOSS on read).
      const broken = await a.agent.runText("broken");
      await setLease(files as SessionStore, broken.sessionId, { invocationId: "dead", expiresAt: Date.now() - 1 });
      // The record's row damaged: its metadata is no longer JSON.
      const db = new DatabaseSync(join(dir, "agentd.db"));
      db.prepare("UPDATE records SET meta = '{' WHERE snapshot_id = ?").run(broken.snapshotId!);
      db.close();
      const { snapshotId } = await detachThenShutDown(a);
      b.gate.release("one");
      await presumeDead(files, snapshotId);
      await expectAgentError(takeOverDeadWork(sourceOf(b, files)), "DATA_LOSS");
      await b.registry.background.drain(4_000);
      expect((await row(files, snapshotId)).status).toBe("completed");
      const reports: TakeoverReport[] = [];
      const stop = b.registry.startWorkTakeover((report) => reports.push(report));
      await until(() => reports.length > 0, "a report");
      await stop();
      expect(reports[0]!.error).toMatchObject({ status: "DATA_LOSS" });
    } finally {
      await files.close();
      await rm(dir, RM_TREE);
    }
  });

  it("skips a leased head whose record is gone", async () => {
    const { store, all } = instances(["A"]);
    const [a] = all as [Instance];
    const done = await a.agent.runText("one");
    const head = (await store.getHead(done.sessionId))!;
    const { version, ...rest } = head;
    await store.commit({
      expectedVersion: version,
      head: {
        ...rest,
        headSnapshotId: "0190bbbb-0000-7000-8000-000000000000",
        lease: { invocationId: "x", expiresAt: 1 },
      },
    });
    expect(await takeOverDeadWork(sourceOf(a, store))).toBe(0);
  });

  it("does not take work over for an agent of the same name served on another store", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a] = all as [Instance, Instance];
    const { snapshotId } = await detachThenShutDown(a);
    await presumeDead(store, snapshotId);
    const elsewhere = instances(["C"]).all[0]!; // its own store
    const source = { ...sourceOf(elsewhere, store), agent: () => elsewhere.agent };
    expect(await takeOverDeadWork(source)).toBe(0);
    expect((await row(store, snapshotId)).work!.runs).toHaveLength(1);
  });

  it("a worker whose heartbeat lands between the listing and the takeover keeps its work", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const { sessionId, snapshotId } = await detachThenShutDown(a);
    await presumeDead(store, snapshotId);
    const head = (await store.getHead(sessionId))!;
    const listed = await row(store, snapshotId);
    await store.updateRecord(snapshotId, (existing) => ({ ...existing, heartbeatAt: Date.now() })); // it woke up
    expect(await b.agent.takeOver(head, listed)).toBe(false);
    expect((await row(store, snapshotId)).work!.runs).toHaveLength(1);
    expect((await store.getHead(sessionId))!.lease).toBeUndefined(); // the lease taken for the attempt is given back
  });

  it("the work's stream goes on after the recorded chunks: a takeover marker naming the cut turn, then the restarted turn and the rest, numbered without gaps", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const key = await detachInputs(a, ["one", "wait:two", "three"]);
    await a.gate.reached("two");
    await a.registry.background.drain(0);
    b.gate.release("two");
    await takeOverUntil(b, store, key.snapshotId, "completed");
    const chunks = await chunksOf(store, key);
    expect(chunks.map((c) => c.sequence)).toEqual(chunks.map((_, i) => i + 1));
    expect(labels(chunks)).toEqual([
      "text:one by ann on A",
      "turnEnd:0:stop",
      "turnEnd:1:failed", // the cut turn, as A ended it at shutdown: superseded by the marker
      "takeover:2:1",
      "text:wait:two by ann on B",
      "turnEnd:1:stop",
      "text:three by ann on B",
      "turnEnd:2:stop",
    ]);
  });

  it("of two instances racing for one dead instance's work, exactly one takes it over", async () => {
    const { store, all } = instances(["A", "B", "C"]);
    const [a, b, c] = all as [Instance, Instance, Instance];
    const { snapshotId } = await detachThenShutDown(a);
    b.gate.release("one");
    c.gate.release("one");
    await presumeDead(store, snapshotId);
    const source = (i: Instance) => ({
      stores: () => [store as SessionStore],
      agent: (name: string) => (name === "bg" ? i.agent : undefined),
      liveness: TEST_LIVENESS,
    });
    const counts = await Promise.all([takeOverDeadWork(source(b)), takeOverDeadWork(source(c))]);
    expect(counts.sort()).toEqual([0, 1]);
    await Promise.all([b.registry.background.drain(4_000), c.registry.background.drain(4_000)]);
    const final = await row(store, snapshotId);
    expect(final.status).toBe("completed");
    expect(final.work!.runs).toHaveLength(2);
    expect(b.takenOver.length + c.takenOver.length).toBe(1);
  });

  it("a tenant's work stays the tenant's: taken over as its principal, and other tenants cannot read it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-takeover-tenant-"));
    const files = await openSqlStore(`sqlite:${join(dir, "agentd.db")}`);
    const acmeCtx = { tenant: "acme" };
    try {
      const [a] = instances(["A"], { store: files }).all as [Instance];
      const [b] = instances(["B"], { store: files }).all as [Instance];
      const acme = Object.freeze({ subject: "ann", tenant: "acme", claims: Object.freeze({}) });
      const connection = await a.agent.connect({}, { principal: acme, storeContext: acmeCtx });
      connection.send({ message: { role: "user", content: [{ text: "wait:one" }] }, detach: true });
      const { sessionId, snapshotId } = await connection.output();
      await a.gate.reached("one");
      await a.registry.background.drain(0);
      b.gate.release("one");
      await presumeDead(files, snapshotId!, acmeCtx);
      const stop = b.registry.startWorkTakeover();
      try {
        await until(async () => (await files.getRecord(snapshotId!, acmeCtx))?.status === "completed", "B to complete");
      } finally {
        await stop();
      }
      await b.registry.background.drain(4_000);
      expect((await files.getHead(sessionId, acmeCtx))!.owner).toBe("acme");
      const done = await b.agent.getSnapshot({ snapshotId: snapshotId! }, { storeContext: acmeCtx });
      expect(historyOf(done.state)).toEqual(["user:wait:one", "model:wait:one by ann on B"]);
      await expectAgentError(
        b.agent.getSnapshot({ snapshotId: snapshotId! }, { storeContext: { tenant: "other" } }),
        "NOT_FOUND",
      );
    } finally {
      await files.close();
      await rm(dir, RM_TREE);
    }
  });

  it("does not take work over while another invocation holds a valid lease on its session", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const { sessionId, snapshotId } = await detachThenShutDown(a);
    await setLease(store as SessionStore, sessionId, { invocationId: "someone-else", expiresAt: Date.now() + 60_000 });
    await presumeDead(store, snapshotId);
    const source = {
      stores: () => [store as SessionStore],
      agent: () => b.agent,
      liveness: TEST_LIVENESS,
    };
    expect(await takeOverDeadWork(source)).toBe(0);
    expect((await row(store, snapshotId)).work!.runs).toHaveLength(1);
    expect((await store.getHead(sessionId))!.lease?.invocationId).toBe("someone-else");
  });

  it("leaves alone the work of an agent this instance does not serve: it reads expired once the window closes", async () => {
    const { store, all } = instances(["A", "B"], { agentOn: (name) => name === "A" });
    const [a, b] = all as [Instance, Instance];
    const { snapshotId } = await detachThenShutDown(a);
    await presumeExpired(store, snapshotId);
    const stop = b.registry.startWorkTakeover();
    try {
      await until(async () => (await a.agent.getSnapshot({ snapshotId })).status === "expired", "the row to expire");
    } finally {
      await stop();
    }
    expect((await row(store, snapshotId)).work!.runs).toHaveLength(1);
    expect(b.takenOver).toEqual([]);
  });

  it("a worker that wakes up after its work was taken over writes nothing more: no chunk, no checkpoint, no final row", async () => {
    const { shared, a, b } = stalledAndSurvivor();
    const key = await detachInputs(a, ["wait:one", "two"]);
    await a.gate.reached("one");
    b.gate.release("one");
    await takeOverUntil(b, shared, key.snapshotId, "completed");
    const finalByB = await row(shared, key.snapshotId);
    const chunksByB = await chunksOf(shared, key);
    await stallPastTtl();
    a.gate.release("one"); // A wakes up
    await a.registry.background.drain(4_000);
    expect(await row(shared, key.snapshotId)).toEqual(finalByB);
    expect(await chunksOf(shared, key)).toEqual(chunksByB);
    expect(historyOf(await loadRecordState(shared, finalByB))).toEqual([
      "user:wait:one",
      "model:wait:one by ann on B",
      "user:two",
      "model:two by ann on B",
    ]);
  });

  it("a worker that wakes up while the instance that took its work over still runs it does not end the row", async () => {
    const { shared, a, b } = stalledAndSurvivor();
    const key = await detachInputs(a, ["wait:one"]);
    await a.gate.reached("one");
    await presumeDead(shared, key.snapshotId);
    const stop = b.registry.startWorkTakeover();
    try {
      await b.gate.reached("one"); // B runs the turn again and waits in it
    } finally {
      await stop();
    }
    await stallPastTtl();
    a.gate.release("one"); // A wakes up, finishes its turn and tries to end the row
    await a.registry.background.drain(4_000);
    const meanwhile = await row(shared, key.snapshotId);
    expect(meanwhile.status).toBe("pending");
    expect(meanwhile.work!.runs.at(-1)!.instance).toBe("B");
    b.gate.release("one");
    await b.registry.background.drain(4_000);
    expect((await row(shared, key.snapshotId)).status).toBe("completed");
  });

  it("a worker that stalls past half the TTL, with nobody taking over, checks its row and goes on", async () => {
    // No heartbeat during the test and no poller: the first chunk after the stall reads the row, finds it its own.
    const { store, all } = instances(["A"], { liveness: { heartbeatIntervalMs: 60_000, heartbeatTtlMs: 150 } });
    const [a] = all as [Instance];
    const { snapshotId } = await detachInputs(a, ["wait:one"]);
    await a.gate.reached("one");
    await new Promise((resolve) => setTimeout(resolve, 120)); // past half the TTL since the row was written
    a.gate.release("one");
    await a.registry.background.drain(4_000);
    expect((await row(store, snapshotId)).status).toBe("completed");
  });

  it("keeps a valid lease on a session whose work is over (a live attached invocation holds it), and a lapsed one on running work", async () => {
    const { store, all } = instances(["A"]);
    const [a] = all as [Instance];
    const done = await a.agent.runText("one");
    await setLease(store as SessionStore, done.sessionId, { invocationId: "live", expiresAt: Date.now() + 60_000 });
    const { sessionId, snapshotId } = await detachInputs(a, ["wait:two"]);
    await a.gate.reached("two");
    await setLease(store as SessionStore, sessionId, { invocationId: "stalled", expiresAt: Date.now() - 1 });
    expect(await takeOverDeadWork(sourceOf(a, store))).toBe(0);
    expect((await store.getHead(done.sessionId))!.lease?.invocationId).toBe("live");
    expect((await store.getHead(sessionId))!.lease?.invocationId).toBe("stalled"); // its row is pending and fresh
    expect((await row(store, snapshotId)).status).toBe("pending");
    a.gate.release("two");
    await a.registry.background.drain(4_000);
  });

  it("drops a lapsed lease left on a session whose work is over (an invocation killed mid-turn), so the session is free", async () => {
    const { store, all } = instances(["A"]);
    const [a] = all as [Instance];
    const done = await a.agent.runText("one");
    await setLease(store as SessionStore, done.sessionId, { invocationId: "dead", expiresAt: Date.now() - 1 });
    expect(
      await takeOverDeadWork({
        stores: () => [store as SessionStore],
        agent: () => undefined,
        liveness: TEST_LIVENESS,
      }),
    ).toBe(0);
    expect((await store.getHead(done.sessionId))!.lease).toBeUndefined();
  });
});

describe("the takeover poll interval (livenessRecheckMs)", () => {
  it("looks every quarter of the heartbeat TTL, and at most every 50 ms", () => {
    expect(livenessRecheckMs({ ...TEST_LIVENESS, heartbeatTtlMs: 30_000 })).toBe(7_500);
    expect(livenessRecheckMs({ ...TEST_LIVENESS, heartbeatTtlMs: 100 })).toBe(50);
  });
});
