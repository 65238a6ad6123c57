import { describe, expect, it, vi } from "vitest";
import {
  appendRecord,
  drain,
  expectAgentError,
  harness,
  register,
  Rendezvous,
  replyTurn,
  setLease,
} from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import { SessionLifecycle } from "../../src/runtime/sessions/session-lifecycle.js";
import { startSessionSweeper, sweepIntervalFor, type SweepReport } from "../../src/runtime/sessions/session-sweeper.js";
import { DEFAULT_LIVENESS } from "../../src/runtime/sessions/snapshot-liveness.js";
import { messageText } from "../../src/types/content.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { ledgerOnlyStore } from "../fixtures/ledger-only-store.js";

vi.setConfig({ testTimeout: 5_000 });

function setup() {
  const h = harness();
  const gate = new Rendezvous();
  const agent = register(h.registry, {
    name: "a",
    store: "default",
    turn: async (input, ctx) => {
      if (messageText(input.message) === "hold")
        await gate.at("hold", ctx.turn.signal).catch((err) => {
          gate.mark(`hold aborted:${AgentError.from(err).status}`);
          throw err;
        });
      await replyTurn(input, ctx);
    },
  });
  const other = register(h.registry, { name: "b", store: "default", turn: replyTurn });
  return { ...h, lifecycle: h.registry.lifecycle, agent, other, gate };
}

/** A store with only the required methods (no lifecycle support). */
function minimalStore(): SessionStore {
  const memory = new InMemorySessionStore();
  return ledgerOnlyStore(memory);
}

describe("SessionLifecycle.get", () => {
  it("describes one of the caller's sessions from its head and head snapshot", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x", { labels: { team: "blue" }, ttlMs: 60_000 });
    const head = (await store.getHead(output.sessionId))!;
    expect(await lifecycle.get(output.sessionId)).toEqual({
      sessionId: output.sessionId,
      agent: "a",
      labels: { team: "blue" },
      turnCount: 1,
      headSnapshotId: output.snapshotId,
      headStatus: "completed",
      createdAt: head.createdAt,
      updatedAt: head.updatedAt,
      expiresAt: head.updatedAt + 60_000,
      ttlMs: 60_000,
    });
  });

  it("reports the session's token usage totals as a copy", async () => {
    const { registry, store } = harness();
    const agent = register(registry, {
      name: "m",
      store: "default",
      turn: (_i, ctx) => generateModelTurn(ctx, "echo"),
    });
    const output = await agent.runText("hello there");
    const info = await registry.lifecycle.get(output.sessionId);
    expect(info.usage).toEqual({ inputTokens: 2, outputTokens: 3, totalTokens: 5 });
    expect(info.usage).not.toBe((await store.getHead(output.sessionId))!.usage);
  });

  it("reports the head snapshot's effective status (a silent pending one is expired)", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    await appendRecord(store, output.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now() - DEFAULT_LIVENESS.heartbeatTtlMs - 1_000,
    });
    const info = await lifecycle.get(output.sessionId);
    expect(info.headStatus).toBe("expired");
    expect(info.labels).toEqual({});
    expect("ttlMs" in info).toBe(false);
    expect("expiresAt" in info).toBe(false);
  });

  it("answers NOT_FOUND for an unknown, foreign or expired session, INVALID_ARGUMENT without an ID", async () => {
    const { store, lifecycle, agent } = setup();
    const mine = await agent.runText("x", {}, { storeContext: { tenant: "t1" } });
    const expiring = await agent.runText("x");
    const { version, ...head } = (await store.getHead(expiring.sessionId))!;
    await store.commit({ expectedVersion: version, head: { ...head, updatedAt: Date.now() - 10_000, ttlMs: 1_000 } });
    await expectAgentError(lifecycle.get(expiring.sessionId), "NOT_FOUND");
    await expectAgentError(lifecycle.get("nope"), "NOT_FOUND", /session "nope" not found/);
    await expectAgentError(lifecycle.get(mine.sessionId), "NOT_FOUND");
    await expectAgentError(lifecycle.get(mine.sessionId, { tenant: "t2" }), "NOT_FOUND");
    expect((await lifecycle.get(mine.sessionId, { tenant: "t1" })).sessionId).toBe(mine.sessionId);
    await expectAgentError(lifecycle.get(""), "INVALID_ARGUMENT", /session_id is required/);
  });
});

describe("SessionLifecycle.list", () => {
  it("lists the caller's sessions newest-updated first, filtered by agent and labels, in pages", async () => {
    const { lifecycle, agent, other } = setup();
    const a1 = await agent.runText("1", { labels: { k: "x" } });
    const b1 = await other.runText("2", { labels: { k: "x" } });
    const a2 = await agent.runText("3", { labels: { k: "y" } });
    await agent.runText("4", {}, { storeContext: { tenant: "t1" } });
    const all = await lifecycle.list({});
    expect(all.sessions.map((s) => s.sessionId)).toEqual([a2.sessionId, b1.sessionId, a1.sessionId]);
    expect((await lifecycle.list({ agent: "a" })).sessions.map((s) => s.sessionId)).toEqual([
      a2.sessionId,
      a1.sessionId,
    ]);
    expect((await lifecycle.list({ labels: { k: "x" } })).sessions.map((s) => s.sessionId)).toEqual([
      b1.sessionId,
      a1.sessionId,
    ]);
    const page = await lifecycle.list({ pageSize: 2 });
    expect(page.sessions).toHaveLength(2);
    const rest = await lifecycle.list({ pageSize: 2, pageToken: page.nextPageToken! });
    expect(rest.sessions.map((s) => s.sessionId)).toEqual([a1.sessionId]);
    expect("nextPageToken" in rest).toBe(false);
  });

  it("lists only sessions updated after the given time", async () => {
    const { lifecycle, agent } = setup();
    const old = await agent.runText("1");
    const { updatedAt } = await lifecycle.get(old.sessionId);
    expect((await lifecycle.list({ updatedAfter: updatedAt - 1 })).sessions.map((s) => s.sessionId)).toEqual([
      old.sessionId,
    ]);
    expect((await lifecycle.list({ updatedAfter: updatedAt })).sessions).toEqual([]);
  });

  it("answers an agent filter naming no agent with an empty list", async () => {
    const { lifecycle } = setup();
    expect(await lifecycle.list({ agent: "nobody" })).toEqual({ sessions: [] });
  });

  it("refuses to list without an agent filter when there is no default store (FAILED_PRECONDITION)", async () => {
    await expectAgentError(new AgentRegistry().lifecycle.list({}), "FAILED_PRECONDITION", /no default session store/);
  });

  it("answers UNIMPLEMENTED on a store that cannot list or delete sessions", async () => {
    const store = minimalStore();
    const registry = new AgentRegistry({ defaultStore: store });
    const agent = register(registry, { name: "m", store: "default", turn: replyTurn });
    const output = await agent.runText("x");
    await expectAgentError(
      registry.lifecycle.list({}),
      "UNIMPLEMENTED",
      /cannot list sessions: use the memory, SQLite, PostgreSQL or MongoDB store$/,
    );
    await expectAgentError(registry.lifecycle.delete(output.sessionId), "UNIMPLEMENTED", /cannot delete sessions/);
  });
});

describe("SessionLifecycle.update", () => {
  it("sets and removes labels and sets a time-to-live counted from now", async () => {
    const { lifecycle, agent } = setup();
    const output = await agent.runText("x", { labels: { a: "1", b: "2" } });
    const before = Date.now();
    const info = await lifecycle.update(output.sessionId, {
      setLabels: { c: "3", a: "9" },
      removeLabels: ["b"],
      ttlMs: 30_000,
    });
    expect(info.labels).toEqual({ a: "9", c: "3" });
    expect(info.ttlMs).toBe(30_000);
    expect(info.expiresAt).toBeGreaterThanOrEqual(before + 30_000);
  });

  it("clears the time-to-live with null, leaves it with undefined, and drops the labels when none remain", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x", { labels: { a: "1" }, ttlMs: 60_000 });
    const kept = await lifecycle.update(output.sessionId, {});
    expect(kept.ttlMs).toBe(60_000);
    const cleared = await lifecycle.update(output.sessionId, { ttlMs: null, removeLabels: ["a"] });
    expect("ttlMs" in cleared).toBe(false);
    expect(cleared.labels).toEqual({});
    const head = (await store.getHead(output.sessionId))!;
    expect(head.labels).toBeUndefined();
    expect(head.expiresAt).toBeUndefined();
  });

  it("refuses an invalid time-to-live or label (INVALID_ARGUMENT) and an unknown session (NOT_FOUND)", async () => {
    const { lifecycle, agent } = setup();
    const output = await agent.runText("x");
    await expectAgentError(lifecycle.update(output.sessionId, { ttlMs: 0 }), "INVALID_ARGUMENT", /time-to-live/);
    await expectAgentError(lifecycle.update(output.sessionId, { setLabels: { "": "x" } }), "INVALID_ARGUMENT");
    await expectAgentError(lifecycle.update("nope", { ttlMs: 5_000 }), "NOT_FOUND");
  });

  it("gives up with ABORTED when the head keeps changing", async () => {
    const memory = new InMemorySessionStore();
    await memory.commit({
      expectedVersion: 0,
      head: { sessionId: "s", agent: "a", owner: "", headSnapshotId: "h", turnCount: 1, createdAt: 1, updatedAt: 1 },
    });
    let attempts = 0;
    const store: SessionStore = {
      ...minimalStore(),
      getHead: (id) => memory.getHead(id),
      getRecord: (id) => memory.getRecord(id),
      commit: async () => {
        attempts++;
        return undefined;
      },
    };
    const lifecycle = new SessionLifecycle({
      defaultStore: store,
      storeOf: () => undefined,
      stores: () => [store],
      liveness: DEFAULT_LIVENESS,
    });
    await expectAgentError(lifecycle.update("s", { setLabels: { a: "b" } }), "ABORTED", /kept changing/);
    expect(attempts).toBe(100);
  });
});

describe("SessionLifecycle.delete", () => {
  it("removes the session and every snapshot of it, and answers false when there is nothing to delete", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(await store.getHead(output.sessionId)).toBeUndefined();
    expect(await store.getRecord(output.snapshotId!)).toBeUndefined();
    expect(await lifecycle.delete(output.sessionId)).toBe(false);
  });

  it("leaves another owner's session intact (false)", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x", {}, { storeContext: { tenant: "t1" } });
    expect(await lifecycle.delete(output.sessionId, { tenant: "t2" })).toBe(false);
    expect(await store.getHead(output.sessionId)).toBeDefined();
  });

  it("refuses an empty session ID with INVALID_ARGUMENT", async () => {
    const { lifecycle } = setup();
    await expectAgentError(lifecycle.delete(""), "INVALID_ARGUMENT");
  });

  it("stops the invocation holding the session first: it ends ABORTED and its turn is never written", async () => {
    const { store, lifecycle, agent, gate } = setup();
    const first = await agent.runText("x");
    const holder = await agent.connect({ sessionId: first.sessionId });
    const reading = drain(holder);
    holder.sendText("hold");
    await gate.reached("hold");
    expect(await lifecycle.delete(first.sessionId)).toBe(true);
    await expectAgentError(holder.output(), "ABORTED", /took over session/);
    await gate.reached("hold aborted:ABORTED");
    expect((await reading).error).toBeInstanceOf(AgentError);
    expect(store.sizes()).toMatchObject({ heads: 0, records: 0 });
  });

  it("aborts pending background work of the session before removing it", async () => {
    const { store, lifecycle, agent, gate } = setup();
    const connection = await agent.connect();
    connection.send({ message: { role: "user", content: [{ text: "hold" }] }, detach: true });
    const output = await connection.output();
    await gate.reached("hold");
    const aborted = store.updateRecord.bind(store);
    const flipped: string[] = [];
    store.updateRecord = async (id, mutator, ctx) => {
      const row = await aborted(id, mutator, ctx);
      if (row?.status === "aborted") flipped.push(id);
      return row;
    };
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(flipped).toEqual([output.snapshotId]);
    await gate.reached("hold aborted:ABORTED");
    expect(await store.getHead(output.sessionId)).toBeUndefined();
  });

  it("takes over a lease held in another process so that its next commit fails", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    await setLease(store, output.sessionId, { invocationId: "remote", expiresAt: Date.now() + 60_000 });
    const writes: (string | undefined)[] = [];
    const commit = store.commit.bind(store);
    store.commit = async (c, ctx) => {
      writes.push(c.head.lease?.invocationId);
      return commit(c, ctx);
    };
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(writes).toEqual([expect.stringMatching(/^delete-/)]);
  });

  it("marks the session taken for a minute while deleting, retrying when the head moved", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    await setLease(store, output.sessionId, { invocationId: "remote", expiresAt: Date.now() + 60_000 });
    const leases: ({ invocationId: string; expiresAt: number } | undefined)[] = [];
    const commit = store.commit.bind(store);
    let refuseFirst = true;
    store.commit = async (c, ctx) => {
      leases.push(c.head.lease);
      if (refuseFirst) {
        refuseFirst = false;
        return undefined;
      }
      return commit(c, ctx);
    };
    const before = Date.now();
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(leases).toHaveLength(2);
    expect(leases[1]!.invocationId).toMatch(/^delete-/);
    expect(leases[1]!.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
  });

  it("writes no marker over a lease that has already run out", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    await setLease(store, output.sessionId, { invocationId: "gone", expiresAt: Date.now() - 1 });
    const commit = store.commit.bind(store);
    let writes = 0;
    store.commit = async (c, ctx) => {
      writes++;
      return commit(c, ctx);
    };
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(writes).toBe(0);
  });

  it("gives up marking the session after 100 refused writes and deletes it anyway", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    await setLease(store, output.sessionId, { invocationId: "remote", expiresAt: Date.now() + 60_000 });
    let writes = 0;
    store.commit = async () => {
      writes++;
      return undefined;
    };
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(writes).toBe(100);
    expect(await store.getHead(output.sessionId)).toBeUndefined();
  });

  it("aborts the pending rows of every page of a long session, and only those", async () => {
    const { store, lifecycle, agent } = setup();
    const output = await agent.runText("x");
    let parentId = output.snapshotId!;
    for (let turn = 1; turn <= 1_001; turn++) {
      parentId = await appendRecord(store, output.sessionId, {
        status: "pending",
        turnIndex: turn,
        heartbeatAt: Date.now(),
        parentId,
      });
    }
    const updated: string[] = [];
    const updateRecord = store.updateRecord.bind(store);
    store.updateRecord = async (id, mutator, ctx) => {
      updated.push(id);
      return updateRecord(id, mutator, ctx);
    };
    expect(await lifecycle.delete(output.sessionId)).toBe(true);
    expect(updated).toHaveLength(1_001);
    expect(updated).not.toContain(output.snapshotId);
  });

  it("finds sessions in agents' own stores when there is no default store", async () => {
    const own = new InMemorySessionStore();
    const registry = new AgentRegistry();
    const agent = register(registry, { name: "own", store: own as SessionStore, turn: replyTurn });
    const output = await agent.runText("x");
    expect((await registry.lifecycle.get(output.sessionId)).agent).toBe("own");
    expect(await registry.lifecycle.delete(output.sessionId)).toBe(true);
  });
});

describe("SessionLifecycle.sweepExpired", () => {
  it("deletes the expired sessions of every store and counts them", async () => {
    const { store, lifecycle, agent } = setup();
    const expiring = await agent.runText("x", { ttlMs: 1_000 });
    const lasting = await agent.runText("y");
    expect(await lifecycle.sweepExpired(Date.now() + 2_000)).toBe(1);
    expect(await store.getHead(expiring.sessionId)).toBeUndefined();
    expect(await store.getHead(lasting.sessionId)).toBeDefined();
    expect(await lifecycle.sweepExpired(Date.now() + 2_000)).toBe(0);
  });

  it("skips stores that cannot sweep", async () => {
    const store = minimalStore();
    const lifecycle = new SessionLifecycle({ storeOf: () => store, stores: () => [store], liveness: DEFAULT_LIVENESS });
    expect(await lifecycle.sweepExpired()).toBe(0);
  });
});

describe("startSessionSweeper", () => {
  const lifecycleSweeping = (...results: (number | Error)[]) => {
    const calls: number[] = [];
    const lifecycle = {
      sweepExpired: async () => {
        calls.push(calls.length);
        const next = results.shift() ?? 0;
        if (next instanceof Error) throw next;
        return next;
      },
      sweepChunks: async () => 0,
    } as unknown as SessionLifecycle;
    return { lifecycle, calls };
  };

  it("sweeps at once, then every interval, reporting passes that removed something or failed", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const failure = new Error("store down");
      const { lifecycle, calls } = lifecycleSweeping(2, 0, failure);
      const reports: SweepReport[] = [];
      const stop = startSessionSweeper(lifecycle, 1_000, (r) => reports.push(r));
      await vi.advanceTimersByTimeAsync(0);
      expect(reports).toEqual([{ removed: 2, removedChunkLogs: 0 }]);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(calls).toHaveLength(3);
      expect(reports).toEqual([{ removed: 2, removedChunkLogs: 0 }, { error: failure }]);
      await stop();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(calls).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("sweeps chunk logs past their retention too, and reports a pass that removed only those", async () => {
    const lifecycle = { sweepExpired: async () => 0, sweepChunks: async () => 3 } as unknown as SessionLifecycle;
    const report = new Promise<SweepReport>((resolve) => {
      const stop = startSessionSweeper(lifecycle, 60_000, (r) => {
        resolve(r);
        void stop();
      });
    });
    expect(await report).toEqual({ removed: 0, removedChunkLogs: 3 });
  });

  it("waits for a running pass when stopped", async () => {
    let finish!: () => void;
    const lifecycle = {
      sweepExpired: () => new Promise<number>((resolve) => (finish = () => resolve(1))),
      sweepChunks: async () => 0,
    } as unknown as SessionLifecycle;
    const reports: SweepReport[] = [];
    const stop = startSessionSweeper(lifecycle, 60_000, (r) => reports.push(r));
    await Promise.resolve();
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(reports).toEqual([{ removed: 1, removedChunkLogs: 0 }]);
  });

  it("runs no pass queued behind a running one once stopped, and leaves no timer behind", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      let calls = 0;
      let finish!: () => void;
      const lifecycle = {
        sweepExpired: () => {
          calls++;
          return new Promise<number>((resolve) => (finish = () => resolve(0)));
        },
        sweepChunks: async () => 0,
      } as unknown as SessionLifecycle;
      const stop = startSessionSweeper(lifecycle, 1_000, () => {});
      await vi.advanceTimersByTimeAsync(1_000); // the second pass is queued behind the running first one
      expect(calls).toBe(1);
      const stopping = stop();
      expect(vi.getTimerCount()).toBe(0);
      finish();
      await stopping;
      await vi.advanceTimersByTimeAsync(0);
      expect(calls).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("does not keep the process alive with its timer", async () => {
    const setIntervalSpy = vi.spyOn(globalThis, "setInterval");
    try {
      const lifecycle = { sweepExpired: async () => 0, sweepChunks: async () => 0 } as unknown as SessionLifecycle;
      const stop = startSessionSweeper(lifecycle, 60_000, () => {});
      const timer = setIntervalSpy.mock.results[0]?.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
      await stop();
    } finally {
      setIntervalSpy.mockRestore();
    }
  });

  it("sweeps every half time-to-live, between 0.5 s and 60 s (60 s without one)", () => {
    expect(sweepIntervalFor(undefined)).toBe(60_000);
    expect(sweepIntervalFor(200)).toBe(500);
    expect(sweepIntervalFor(10_001)).toBe(5_000);
    expect(sweepIntervalFor(1_000_000)).toBe(60_000);
  });
});
