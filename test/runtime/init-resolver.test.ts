import { describe, expect, it, vi } from "vitest";
import {
  appendRecord,
  drain,
  expectAgentError,
  harness,
  historyOf,
  recordsOf,
  register,
  Rendezvous,
  replyTurn,
  setLease,
  until,
  type Harness,
} from "./runtime-fixtures.js";
import { z } from "zod";
import { resolveInit, type InitTarget, type ResolvedStart } from "../../src/runtime/sessions/init-resolver.js";
import { DEFAULT_CLAIM_SETTINGS } from "../../src/runtime/sessions/session-claim.js";
import { DEFAULT_LIVENESS } from "../../src/runtime/sessions/snapshot-liveness.js";
import { messageText, userText } from "../../src/types/content.js";
import type { AgentInit } from "../../src/types/session-state.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { uuidv7 } from "../../stores/uuid-v7.js";

vi.setConfig({ testTimeout: 5_000 });

/** A registry with agent "a" (replies to each message) and an init target of the same name on its store. */
function setup(
  overrides: Partial<InitTarget<unknown>> = {},
): Harness & { target: InitTarget<unknown>; agent: ReturnType<typeof register> } {
  const h = harness();
  const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
  const target: InitTarget<unknown> = {
    name: "a",
    store: h.store as SessionStore,
    liveness: DEFAULT_LIVENESS,
    busyPolicy: "reject",
    claims: DEFAULT_CLAIM_SETTINGS,
    transforms: {},
    ...overrides,
  };
  return { ...h, target, agent };
}

/** Resolves `init` for a fresh invocation ID, releasing the claim afterwards. */
async function resolveAndRelease(
  target: InitTarget<unknown>,
  init: AgentInit,
  call: { ctx?: { tenant: string }; signal?: AbortSignal } = {},
): Promise<ResolvedStart<unknown> & { invocationId: string }> {
  const invocationId = uuidv7();
  const start = await resolveInit(target, init, { invocationId, ...call });
  await start.claim?.release();
  return { ...start, invocationId };
}

const clientTarget = (stateSchema?: z.ZodType<unknown>): InitTarget<unknown> => ({
  name: "c",
  transforms: {},
  liveness: DEFAULT_LIVENESS,
  busyPolicy: "reject",
  claims: DEFAULT_CLAIM_SETTINGS,
  ...(stateSchema ? { stateSchema } : {}),
});

describe("resolveInit: state management", () => {
  it("refuses state combined with a session or snapshot ID (INVALID_ARGUMENT)", async () => {
    const { target } = setup();
    const state = { messages: [], artifacts: [] };
    await expectAgentError(
      resolveInit(target, { state, sessionId: "s" }, { invocationId: "i" }),
      "INVALID_ARGUMENT",
      /state cannot be combined/,
    );
    await expectAgentError(
      resolveInit(clientTarget(), { state, snapshotId: "x" }, { invocationId: "i" }),
      "INVALID_ARGUMENT",
      /state cannot be combined/,
    );
  });

  it("adopts client state without a custom key when the client sent no custom state", async () => {
    const start = await resolveInit(clientTarget(), { state: { messages: [], artifacts: [] } }, { invocationId: "i" });
    expect(start.state.sessionId).not.toBe("");
    expect("custom" in start.state).toBe(false);
  });

  it("refuses session and snapshot IDs for a client-managed agent (FAILED_PRECONDITION)", async () => {
    await expectAgentError(
      resolveInit(clientTarget(), { sessionId: "s" }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      /agent "c" is client-managed/,
    );
    await expectAgentError(
      resolveInit(clientTarget(), { snapshotId: "x" }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      /client-managed/,
    );
  });

  it("refuses state sent to a server-managed agent (FAILED_PRECONDITION)", async () => {
    const { target } = setup();
    await expectAgentError(
      resolveInit(target, { state: { messages: [], artifacts: [] } }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      /keeps conversation state on the server/,
    );
  });

  it("starts a client-managed conversation without state empty, new session ID, turn 0, no claim", async () => {
    const start = await resolveInit(clientTarget(), {}, { invocationId: "i" });
    expect(start.state).toEqual({ sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/), messages: [], artifacts: [] });
    expect(start.nextTurnIndex).toBe(0);
    expect(start.claim).toBeUndefined();
    expect(start.parent).toBeUndefined();
  });

  it("continues client-managed state as sent, the turn index counting its user messages", async () => {
    const state = {
      sessionId: "mine",
      messages: [userText("a"), { role: "model" as const, content: [{ text: "b" }] }, userText("c")],
      artifacts: [{ parts: [{ text: "x" }] }],
      custom: { n: 1 },
    };
    const start = await resolveInit(clientTarget(), { state }, { invocationId: "i" });
    expect(start.state).toEqual(state);
    expect(start.nextTurnIndex).toBe(2);
  });

  it("gives client-managed state with an empty session ID a new one", async () => {
    const start = await resolveInit(
      clientTarget(),
      { state: { sessionId: "", messages: [], artifacts: [] } },
      { invocationId: "i" },
    );
    expect(start.state.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("parses client-managed custom state with the schema (INVALID_ARGUMENT naming init.state.custom)", async () => {
    const schema = z.object({ n: z.number(), tag: z.string().default("t") }) as z.ZodType<unknown>;
    const ok = await resolveInit(
      clientTarget(schema),
      { state: { messages: [], artifacts: [], custom: { n: 1 } } },
      { invocationId: "i" },
    );
    expect(ok.state.custom).toEqual({ n: 1, tag: "t" });
    await expectAgentError(
      resolveInit(
        clientTarget(schema),
        { state: { messages: [], artifacts: [], custom: { n: "x" } } },
        { invocationId: "i" },
      ),
      "INVALID_ARGUMENT",
      /^init\.state\.custom: .*n/,
    );
  });
});

describe("resolveInit: new server-managed sessions", () => {
  it("starts empty at turn 0 under a new session ID, holding a claim, writing nothing yet", async () => {
    const { target, store } = setup();
    const start = await resolveAndRelease(target, {});
    expect(start.state).toEqual({ sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/), messages: [], artifacts: [] });
    expect(start.nextTurnIndex).toBe(0);
    expect(start.parent).toBeUndefined();
    expect(start.claim!.sessionId).toBe(start.state.sessionId);
    expect(start.claim!.invocationId).toBe(start.invocationId);
    expect(store.sizes().heads).toBe(0);
  });

  it("creates the session with the labels and time-to-live of init at its first turn", async () => {
    const { store, agent } = setup();
    const before = Date.now();
    const output = await agent.runText("x", { labels: { team: "blue" }, ttlMs: 60_000 });
    const head = (await store.getHead(output.sessionId))!;
    expect(head.labels).toEqual({ team: "blue" });
    expect(head.ttlMs).toBe(60_000);
    expect(head.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
  });

  it("gives new sessions the default time-to-live when init sets none, and no labels for an empty set", async () => {
    const { store, registry } = harness({ sessions: { sessionTtlMs: 5_000 } });
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const output = await agent.runText("x", { labels: {} });
    const head = (await store.getHead(output.sessionId))!;
    expect(head.ttlMs).toBe(5_000);
    expect(head.labels).toBeUndefined();
    const explicit = await agent.runText("x", { ttlMs: 9_000 });
    expect((await store.getHead(explicit.sessionId))!.ttlMs).toBe(9_000);
  });

  it("refuses an invalid time-to-live or label with INVALID_ARGUMENT", async () => {
    const { target } = setup();
    await expectAgentError(
      resolveInit(target, { ttlMs: 0 }, { invocationId: "i" }),
      "INVALID_ARGUMENT",
      /time-to-live/,
    );
    await expectAgentError(
      resolveInit({ ...target, sessionTtlMs: 1.5 }, {}, { invocationId: "i" }),
      "INVALID_ARGUMENT",
      /time-to-live/,
    );
    await expectAgentError(resolveInit(target, { labels: { "": "x" } }, { invocationId: "i" }), "INVALID_ARGUMENT");
  });
});

describe("resolveInit: resuming", () => {
  it("resumes a snapshot by ID: its state, it as parent, the next turn index, and the session's lease", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const invocationId = uuidv7();
    const start = await resolveInit(target, { snapshotId: first.snapshotId! }, { invocationId });
    expect(historyOf(start.state)).toEqual(["user:one", "model:reply: one"]);
    expect(start.state.sessionId).toBe(first.sessionId);
    expect(start.nextTurnIndex).toBe(1);
    const record = (await store.getRecord(first.snapshotId!))!;
    expect(start.parent).toEqual({
      snapshotId: first.snapshotId,
      createdAt: record.createdAt,
      state: start.state,
      position: { depth: 0, deltaBytes: 0, checkpointBytes: record.checkpointBytes, checkpointTurn: 0 },
    });
    expect((await store.getHead(first.sessionId))!.lease!.invocationId).toBe(invocationId);
    await start.claim!.release();
    expect((await store.getHead(first.sessionId))!.lease).toBeUndefined();
  });

  it("resumes a session by ID from its head snapshot", async () => {
    const { target, agent } = setup();
    const first = await agent.runText("one");
    const second = await agent.runText("two", { sessionId: first.sessionId });
    const start = await resolveAndRelease(target, { sessionId: first.sessionId });
    expect(start.parent!.snapshotId).toBe(second.snapshotId);
    expect(start.nextTurnIndex).toBe(2);
    expect(historyOf(start.state)).toHaveLength(4);
  });

  it("answers NOT_FOUND for an unknown session or snapshot", async () => {
    const { target } = setup();
    await expectAgentError(
      resolveInit(target, { sessionId: "nope" }, { invocationId: "i" }),
      "NOT_FOUND",
      /session "nope" not found/,
    );
    await expectAgentError(
      resolveInit(target, { snapshotId: "nope" }, { invocationId: "i" }),
      "NOT_FOUND",
      /snapshot "nope" not found/,
    );
  });

  it("answers NOT_FOUND for another agent's or another owner's session, exactly as for an unknown one", async () => {
    const { target, agent } = setup();
    const output = await agent.runText("one", {}, { storeContext: { tenant: "t1" } });
    const other = { ...target, name: "b" };
    await expectAgentError(
      resolveInit(other, { sessionId: output.sessionId }, { invocationId: "i", ctx: { tenant: "t1" } }),
      "NOT_FOUND",
    );
    await expectAgentError(
      resolveInit(other, { snapshotId: output.snapshotId! }, { invocationId: "i", ctx: { tenant: "t1" } }),
      "NOT_FOUND",
    );
    await expectAgentError(
      resolveInit(target, { sessionId: output.sessionId }, { invocationId: "i", ctx: { tenant: "t2" } }),
      "NOT_FOUND",
    );
    await expectAgentError(resolveInit(target, { sessionId: output.sessionId }, { invocationId: "i" }), "NOT_FOUND");
    const mine = await resolveAndRelease(target, { sessionId: output.sessionId }, { ctx: { tenant: "t1" } });
    expect(mine.parent!.snapshotId).toBe(output.snapshotId);
  });

  it("refuses a snapshot ID paired with another session's ID (INVALID_ARGUMENT)", async () => {
    const { target, agent } = setup();
    const a = await agent.runText("a");
    const b = await agent.runText("b");
    await expectAgentError(
      resolveInit(target, { snapshotId: a.snapshotId!, sessionId: b.sessionId }, { invocationId: "i" }),
      "INVALID_ARGUMENT",
      /belongs to another session/,
    );
  });

  it("refuses to resume a pending snapshot (FAILED_PRECONDITION naming its parent), taking nothing", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const pending = await appendRecord(store, first.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now(),
    });
    await expectAgentError(
      resolveInit(target, { snapshotId: pending }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      new RegExp(
        `snapshot "${pending}" is pending: only completed snapshots can be resumed; ` +
          `.*its parent is "${first.snapshotId}"`,
      ),
    );
    expect((await store.getHead(first.sessionId))!.lease).toBeUndefined();
  });

  it.each(["failed", "aborted"] as const)(
    "resumes a session whose head is %s from its nearest completed ancestor",
    async (status) => {
      const { target, store, agent } = setup();
      const first = await agent.runText("one");
      const dead = await appendRecord(store, first.sessionId, { status, turnIndex: 1 });
      const deader = await appendRecord(store, first.sessionId, { status, turnIndex: 2, parentId: dead });
      expect((await store.getHead(first.sessionId))!.headSnapshotId).toBe(deader);
      const start = await resolveAndRelease(target, { sessionId: first.sessionId });
      expect(start.parent!.snapshotId).toBe(first.snapshotId);
      expect(start.nextTurnIndex).toBe(1);
    },
  );

  it.each(["missing", "foreign"])("stops looking back at a %s parent and refuses the dead head", async (kind) => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const elsewhere = await agent.runText("elsewhere");
    const parentId = kind === "missing" ? "no-such-snapshot" : elsewhere.snapshotId!;
    const dead = await appendRecord(store, first.sessionId, { status: "failed", turnIndex: 1, parentId });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      new RegExp(`snapshot "${dead}" is failed: .*its parent is "${parentId}"`),
    );
  });

  it("resumes a session whose head is pending with a stale heartbeat (expired) from its completed parent", async () => {
    const { target, store, agent } = setup({
      liveness: { ...DEFAULT_LIVENESS, heartbeatIntervalMs: 1_000, heartbeatTtlMs: 1_000 },
    });
    const first = await agent.runText("one");
    await appendRecord(store, first.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: Date.now() - 5_000 });
    const start = await resolveAndRelease(target, { sessionId: first.sessionId });
    expect(start.parent!.snapshotId).toBe(first.snapshotId);
  });

  it("refuses a session whose dead head has no completed ancestor, and releases the session it took", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const orphan = await appendRecord(store, first.sessionId, { status: "failed", turnIndex: 1, parentId: null });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      new RegExp(`snapshot "${orphan}" is failed: .*resume from an earlier snapshot$`),
    );
    expect((await store.getHead(first.sessionId))!.lease).toBeUndefined();
  });

  it("refuses a session whose head is pending detached work (FAILED_PRECONDITION), releasing it", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const pending = await appendRecord(store, first.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now(),
    });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      new RegExp(`"${pending}" is pending`),
    );
    expect((await store.getHead(first.sessionId))!.lease).toBeUndefined();
  });

  it("refuses INTERRUPT on a session running detached work: Abort it first (FAILED_PRECONDITION)", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const pending = await appendRecord(store, first.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now(),
    });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId, busyPolicy: "interrupt" }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      new RegExp(`is running detached work \\(snapshot "${pending}" is pending\\)`),
    );
  });

  it("refuses a session whose head record is missing from the store with DATA_LOSS, releasing the session it took", async () => {
    const store = new InMemorySessionStore();
    const target: InitTarget<unknown> = {
      name: "a",
      store,
      transforms: {},
      liveness: DEFAULT_LIVENESS,
      busyPolicy: "reject",
      claims: DEFAULT_CLAIM_SETTINGS,
    };
    await store.commit({
      expectedVersion: 0,
      head: { sessionId: "s", agent: "a", owner: "", headSnapshotId: "gone", turnCount: 1, createdAt: 1, updatedAt: 1 },
    });
    await expectAgentError(
      resolveInit(target, { sessionId: "s" }, { invocationId: "i" }),
      "DATA_LOSS",
      /session "s" points at snapshot "gone", which is missing from the store/,
    );
    expect((await store.getHead("s"))!.lease).toBeUndefined();
  });
});

describe("resolveInit: busy sessions", () => {
  it("REJECT: fails with ABORTED naming the invocation holding the session", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder-1", expiresAt: Date.now() + 60_000 });
    const error = await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "ABORTED",
      /is busy: invocation "holder-1" is running on it/,
    );
    expect(error.details).toEqual({ sessionId: first.sessionId, runningInvocationId: "holder-1" });
  });

  it("REJECT is the agent's default policy, which init's busyPolicy overrides", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder-1", expiresAt: Date.now() + 60_000 });
    const start = await resolveAndRelease(
      { ...target, busyPolicy: "reject" },
      { sessionId: first.sessionId, busyPolicy: "interrupt" },
    );
    expect(start.parent!.snapshotId).toBe(first.snapshotId);
    await setLease(store, first.sessionId, { invocationId: "holder-2", expiresAt: Date.now() + 60_000 });
    const taken = await resolveAndRelease({ ...target, busyPolicy: "interrupt" }, { sessionId: first.sessionId });
    expect(taken.parent!.snapshotId).toBe(first.snapshotId);
  });

  it("ignores a lease that has run out (its holder died)", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "dead", expiresAt: Date.now() - 1 });
    const invocationId = uuidv7();
    const start = await resolveInit(target, { sessionId: first.sessionId }, { invocationId });
    expect((await store.getHead(first.sessionId))!.lease!.invocationId).toBe(invocationId);
    await start.claim!.release();
  });

  it("INTERRUPT: takes the lease from the running invocation", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder-1", expiresAt: Date.now() + 60_000 });
    const invocationId = uuidv7();
    const start = await resolveInit(target, { sessionId: first.sessionId, busyPolicy: "interrupt" }, { invocationId });
    expect((await store.getHead(first.sessionId))!.lease!.invocationId).toBe(invocationId);
    await start.claim!.release();
  });

  it("drops at once the lease of a detached worker that died (its pending head expired), then resumes", async () => {
    const liveness = { ...DEFAULT_LIVENESS, heartbeatIntervalMs: 1_000, heartbeatTtlMs: 1_000 };
    const { target, store, agent } = setup({ liveness });
    const first = await agent.runText("one");
    const now = Date.now();
    await appendRecord(store, first.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: now - 5_000 });
    // Last refreshed when the worker last beat: within heartbeatAt + min(heartbeatTtl, leaseTtl - refresh).
    await setLease(store, first.sessionId, {
      invocationId: "worker",
      expiresAt: now - 5_000 + DEFAULT_CLAIM_SETTINGS.leaseTtlMs,
    });
    const start = await resolveAndRelease(target, { sessionId: first.sessionId });
    expect(start.parent!.snapshotId).toBe(first.snapshotId);
  });

  it("keeps a lease refreshed after the dead worker's last heartbeat: REJECT fails ABORTED", async () => {
    const liveness = { ...DEFAULT_LIVENESS, heartbeatIntervalMs: 1_000, heartbeatTtlMs: 1_000 };
    const { target, store, agent } = setup({ liveness });
    const first = await agent.runText("one");
    const now = Date.now();
    await appendRecord(store, first.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: now - 5_000 });
    await setLease(store, first.sessionId, {
      invocationId: "newer",
      expiresAt: now - 2_000 + DEFAULT_CLAIM_SETTINGS.leaseTtlMs,
    });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "ABORTED",
      /"newer"/,
    );
  });

  it("refuses a dead head whose nearest live ancestor is still pending, naming the dead head", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const pending = await appendRecord(store, first.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now(),
    });
    const failed = await appendRecord(store, first.sessionId, { status: "failed", turnIndex: 2, parentId: pending });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "FAILED_PRECONDITION",
      new RegExp(`snapshot "${failed}" is failed`),
    );
  });

  it("drops a dead worker's lease refreshed exactly at the end of the window after its last heartbeat", async () => {
    const liveness = { ...DEFAULT_LIVENESS, heartbeatIntervalMs: 1_000, heartbeatTtlMs: 1_000 };
    const { target, store, agent } = setup({ liveness });
    const first = await agent.runText("one");
    const lastBeat = Date.now() - 5_000;
    await appendRecord(store, first.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: lastBeat });
    await setLease(store, first.sessionId, {
      invocationId: "worker",
      expiresAt: lastBeat + 1_000 + DEFAULT_CLAIM_SETTINGS.leaseTtlMs, // refreshed at lastBeat + min(1 s, 15 s - 5 s)
    });
    const start = await resolveAndRelease(target, { sessionId: first.sessionId });
    expect(start.parent!.snapshotId).toBe(first.snapshotId);
  });

  it("keeps a lease taken once the dead worker's own lease could have run out (leaseTtl - refresh after its heartbeat)", async () => {
    // heartbeat TTL 12 s > leaseTtl - refresh = 10 s: the window is 10 s.
    const liveness = { ...DEFAULT_LIVENESS, heartbeatIntervalMs: 1_000, heartbeatTtlMs: 12_000 };
    const { target, store, agent } = setup({ liveness });
    const first = await agent.runText("one");
    const lastBeat = Date.now() - 13_000;
    await appendRecord(store, first.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: lastBeat });
    await setLease(store, first.sessionId, {
      invocationId: "newer",
      expiresAt: lastBeat + 11_000 + DEFAULT_CLAIM_SETTINGS.leaseTtlMs, // taken 11 s after the last heartbeat
    });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "ABORTED",
      /"newer"/,
    );
  });

  it("makes the session claim's store calls with the call's context", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one", {}, { storeContext: { tenant: "t1" } });
    const contexts: unknown[] = [];
    const watched = Object.assign(Object.create(store) as typeof store, {
      commit: (request: Parameters<typeof store.commit>[0], ctx?: Parameters<typeof store.commit>[1]) => {
        contexts.push(ctx);
        return store.commit(request, ctx);
      },
    });
    await resolveAndRelease({ ...target, store: watched }, { sessionId: first.sessionId }, { ctx: { tenant: "t1" } });
    expect(contexts.length).toBeGreaterThan(0);
    expect(contexts.every((ctx) => (ctx as { tenant?: string } | undefined)?.tenant === "t1")).toBe(true);
  });

  it("keeps the lease when the pending head is still alive (not expired): REJECT fails ABORTED", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    const now = Date.now();
    await appendRecord(store, first.sessionId, { status: "pending", turnIndex: 1, heartbeatAt: now });
    await setLease(store, first.sessionId, {
      invocationId: "worker",
      expiresAt: now + DEFAULT_CLAIM_SETTINGS.leaseTtlMs,
    });
    await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId }, { invocationId: "i" }),
      "ABORTED",
      /"worker"/,
    );
  });

  it("ENQUEUE: joins the line, waits while the session is held, and resumes once it is released", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const invocationId = uuidv7();
    const waiting = resolveInit(target, { sessionId: first.sessionId, busyPolicy: "enqueue" }, { invocationId });
    await until(
      async () => (await store.getHead(first.sessionId))!.waiters?.[0]?.invocationId === invocationId,
      "the waiter to queue",
    );
    await setLease(store, first.sessionId, undefined);
    const start = await waiting;
    const head = (await store.getHead(first.sessionId))!;
    expect(head.lease!.invocationId).toBe(invocationId);
    expect(head.waiters).toBeUndefined();
    await start.claim!.release();
  });

  it("ENQUEUE: gives up with DEADLINE_EXCEEDED when the call's signal aborts, leaving the line", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const deadline = new AbortController();
    const waiting = resolveInit(
      target,
      { sessionId: first.sessionId, busyPolicy: "enqueue" },
      { invocationId: "w", signal: deadline.signal },
    );
    await until(async () => (await store.getHead(first.sessionId))!.waiters?.length === 1, "the waiter to queue");
    deadline.abort(new Error("deadline"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED", /deadline passed first/);
    expect((await store.getHead(first.sessionId))!.waiters).toBeUndefined();
  });

  it("ENQUEUE: answers CANCELLED when the call was cancelled (CANCELLED reason or Connect code 1)", async () => {
    const { target, store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const init: AgentInit = { sessionId: first.sessionId, busyPolicy: "enqueue" };
    await expectAgentError(
      resolveInit(target, init, { invocationId: "w", signal: AbortSignal.abort({ code: 1 }) }),
      "CANCELLED",
      /cancelled while waiting/,
    );
    await expectAgentError(
      resolveInit(target, init, { invocationId: "w", signal: AbortSignal.abort({ status: "CANCELLED" }) }),
      "CANCELLED",
    );
    await expectAgentError(
      resolveInit(target, init, { invocationId: "w", signal: AbortSignal.abort() }),
      "DEADLINE_EXCEEDED",
    );
  });

  it("ENQUEUE: refuses to join a full line with RESOURCE_EXHAUSTED", async () => {
    const { target, store, agent } = setup({ claims: { ...DEFAULT_CLAIM_SETTINGS, maxWaiters: 1 } });
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const head = (await store.getHead(first.sessionId))!;
    const { version, ...rest } = head;
    await store.commit({
      expectedVersion: version,
      head: { ...rest, waiters: [{ invocationId: "w1", expiresAt: Date.now() + 60_000 }] },
    });
    const error = await expectAgentError(
      resolveInit(target, { sessionId: first.sessionId, busyPolicy: "enqueue" }, { invocationId: "w2" }),
      "RESOURCE_EXHAUSTED",
      /already has 1 queued invocations/,
    );
    expect(error.details).toEqual({ sessionId: first.sessionId, maxWaiters: 1 });
  });

  it("ENQUEUE: serves waiters first come, first served", async () => {
    const { store, agent } = setup();
    const first = await agent.runText("one");
    await setLease(store, first.sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const order: string[] = [];
    const waiter = async (name: string): Promise<void> => {
      const connection = await agent.connect({ sessionId: first.sessionId, busyPolicy: "enqueue" });
      order.push(name);
      connection.sendText(name);
      await connection.output();
    };
    const a = waiter("A");
    await until(async () => (await store.getHead(first.sessionId))!.waiters?.length === 1, "A to queue");
    const b = waiter("B");
    await until(async () => (await store.getHead(first.sessionId))!.waiters?.length === 2, "B to queue");
    await setLease(store, first.sessionId, undefined);
    await Promise.all([a, b]);
    expect(order).toEqual(["A", "B"]);
    const snapshot = await agent.getSnapshot({ sessionId: first.sessionId });
    expect(historyOf(snapshot.state).filter((m) => m.startsWith("user:"))).toEqual(["user:one", "user:A", "user:B"]);
  });
});

describe("resolveInit: branching from an earlier snapshot", () => {
  /** A two-turn session plus a running invocation on it, blocked in a turn until released. */
  async function busySession(): Promise<{
    h: Harness;
    agent: ReturnType<typeof register>;
    snapshots: string[];
    sessionId: string;
    holder: Awaited<ReturnType<ReturnType<typeof register>["connect"]>>;
    gate: Rendezvous;
  }> {
    const h = harness();
    const gate = new Rendezvous();
    const agent = register(h.registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        const text = messageText(input.message);
        if (text === "hold") await gate.at("hold", ctx.turn.signal).catch(() => gate.mark("hold aborted"));
        await replyTurn(input, ctx);
      },
    });
    const one = await agent.runText("one");
    const two = await agent.runText("two", { sessionId: one.sessionId });
    const holder = await agent.connect({ sessionId: one.sessionId });
    holder.sendText("hold");
    await gate.reached("hold");
    return { h, agent, snapshots: [one.snapshotId!, two.snapshotId!], sessionId: one.sessionId, holder, gate };
  }

  it("on a free session: the turn's parent is the named snapshot, the head moves, the other branch stays", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    const one = await agent.runText("one");
    const two = await agent.runText("two", { sessionId: one.sessionId });
    const branch = await agent.runText("branch", { snapshotId: one.snapshotId! });
    expect(branch.sessionId).toBe(one.sessionId);
    expect((await h.store.getRecord(branch.snapshotId!))!).toMatchObject({ parentId: one.snapshotId, turnIndex: 1 });
    expect((await h.store.getHead(one.sessionId))!.headSnapshotId).toBe(branch.snapshotId);
    expect(historyOf((await agent.getSnapshot({ snapshotId: branch.snapshotId! })).state)).toEqual([
      "user:one",
      "model:reply: one",
      "user:branch",
      "model:reply: branch",
    ]);
    expect(historyOf((await agent.getSnapshot({ snapshotId: two.snapshotId! })).state)).toEqual([
      "user:one",
      "model:reply: one",
      "user:two",
      "model:reply: two",
    ]);
    const next = await agent.runText("next", { sessionId: one.sessionId });
    expect((await h.store.getRecord(next.snapshotId!))!.parentId).toBe(branch.snapshotId);
  });

  it("REJECT on a busy session: ABORTED, and the running invocation goes on", async () => {
    const { agent, snapshots, holder, gate } = await busySession();
    await expectAgentError(agent.connect({ snapshotId: snapshots[0]! }), "ABORTED", /is busy/);
    gate.release("hold");
    expect((await holder.output()).finishReason).toBe("stop");
  });

  it("ENQUEUE on a busy session: waits, then branches from the named snapshot, not the newer head", async () => {
    const { h, agent, snapshots, sessionId, holder, gate } = await busySession();
    const waiting = agent.connect({ snapshotId: snapshots[0]!, busyPolicy: "enqueue" });
    await until(async () => (await h.store.getHead(sessionId))!.waiters?.length === 1, "the waiter to queue");
    gate.release("hold");
    const held = await holder.output();
    const connection = await waiting;
    connection.sendText("branch");
    const output = await connection.output();
    expect((await h.store.getRecord(output.snapshotId!))!.parentId).toBe(snapshots[0]);
    expect((await h.store.getRecord(held.snapshotId!))!.parentId).toBe(snapshots[1]);
    expect((await h.store.getHead(sessionId))!.headSnapshotId).toBe(output.snapshotId);
  });

  it("INTERRUPT on a busy session: the holder ends ABORTED, the branch builds on the named snapshot", async () => {
    const { h, agent, snapshots, sessionId, holder, gate } = await busySession();
    const reading = drain(holder);
    const connection = await agent.connect({ snapshotId: snapshots[0]!, busyPolicy: "interrupt" });
    await expectAgentError(holder.output(), "ABORTED", /interrupted/);
    await gate.reached("hold aborted");
    expect((await reading).chunks).toEqual([]);
    connection.sendText("branch");
    const output = await connection.output();
    const records = await recordsOf(h.store, sessionId);
    expect(records.map((r) => r.parentId)).toEqual([undefined, snapshots[0], snapshots[0]]);
    expect(records[2]!.snapshotId).toBe(output.snapshotId);
  });
});
