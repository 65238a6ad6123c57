// SessionClaim while and after it holds a session: usage totals, the lease
// refresh, losing the session, and release. (Acquiring: session-claim-queue.test.ts.)
import { afterEach, describe, expect, it, vi } from "vitest";
import { claimOf, existingSession, hookedStore, patchHead, record } from "./claim-fixtures.js";
import { appendRecord, deferred, expectAgentError, setLease } from "./runtime-fixtures.js";
import type { AgentError } from "../../src/errors/agent-error.js";
import { DEFAULT_CLAIM_SETTINGS } from "../../src/runtime/sessions/session-claim.js";
import { leaseHolder } from "../../src/runtime/sessions/lease-holder.js";
import type { Usage } from "../../src/types/usage.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

vi.setConfig({ testTimeout: 5_000 });

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const u = (inputTokens: number, outputTokens: number): Usage => ({
  inputTokens,
  outputTokens,
  totalTokens: inputTokens + outputTokens,
});

/** Lets pending store calls (each a few microtasks and immediates) finish. */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Fakes the lease-refresh interval (and, with `date`, the clock) so a test fires refreshes itself. */
function fakeRefreshTimer(date = false): void {
  vi.useFakeTimers({ toFake: date ? ["Date", "setInterval", "clearInterval"] : ["setInterval", "clearInterval"] });
}

describe("SessionClaim usage totals", () => {
  it("starts the totals of a new session with its first commit's usage", async () => {
    const store = new InMemorySessionStore();
    const claim = claimOf(store, "s1");
    claim.startFresh();
    const head = await claim.commit(record("s1"), u(3, 4));
    expect(head.usage).toEqual(u(3, 4));
    await claim.release();
  });

  it("adds each commit's usage to the session's totals", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await claim.commit(record(sessionId, 1), u(1, 2));
    const head = await claim.commit(record(sessionId, 2), u(10, 20));
    expect(head.usage).toEqual(u(11, 22));
    await claim.release();
  });

  it("addUsage adds to the held session's totals without moving its head", async () => {
    const store = new InMemorySessionStore();
    const { sessionId, snapshotId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await claim.addUsage(u(5, 6));
    const head = (await store.getHead(sessionId))!;
    expect(head).toMatchObject({ usage: u(5, 6), headSnapshotId: snapshotId, turnCount: 1 });
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    expect(claim.currentHead).toEqual(head);
    await claim.release();
  });

  it("addUsage reads the head of a session the claim has not read yet", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    await claimOf(store, sessionId).addUsage(u(5, 6));
    expect((await store.getHead(sessionId))!.usage).toEqual(u(5, 6));
  });

  it("addUsage retries after a conflicting write, adding to the totals it then reads", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await patchHead(store, sessionId, { usage: u(100, 200) });
    await claim.addUsage(u(5, 6));
    expect((await store.getHead(sessionId))!.usage).toEqual(u(105, 206));
    await claim.release();
  });

  it("addUsage still adds the spent tokens after the claim lost the session", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await setLease(store, sessionId, { invocationId: "thief", expiresAt: Date.now() + 60_000 });
    await expectAgentError(claim.commit(record(sessionId, 1)), "ABORTED");
    await claim.addUsage(u(5, 6));
    const head = (await store.getHead(sessionId))!;
    expect(head.usage).toEqual(u(5, 6));
    expect(head.lease!.invocationId).toBe("thief");
  });

  it("addUsage gives up quietly after 200 refused writes", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const store = hookedStore(memory, (commit) => (commit.head.usage ? "refuse" : "write"));
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await claim.addUsage(u(5, 6));
    expect(store.commits.filter((commit) => commit.head.usage)).toHaveLength(200);
    expect((await memory.getHead(sessionId))!.usage).toBeUndefined();
    await claim.release();
  });
});

describe("SessionClaim after losing the session", () => {
  it("refuses to commit once told it was interrupted, even before the store shows the takeover", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    const held = await claim.acquire("reject");
    claim.interruptedBy("other");
    const next = record(sessionId, 1);
    await expectAgentError(claim.commit(next), "ABORTED", /interrupted: invocation "other" took over/);
    expect(await store.getRecord(next.snapshotId)).toBeUndefined();
    expect(await store.getHead(sessionId)).toEqual(held);
  });

  it("keeps the first reason it lost the session, told once", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const lost: AgentError[] = [];
    claim.whenLost((err) => lost.push(err));
    claim.interruptedBy("first");
    claim.interruptedBy("second");
    expect(lost).toHaveLength(1);
    expect(lost[0]!.message).toMatch(/invocation "first" took over/);
    await expect(claim.commit(record(sessionId, 1))).rejects.toBe(lost[0]);
  });

  it("names no new holder when the lease that replaced its own has already expired", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now);
    await setLease(store, sessionId, { invocationId: "stalled", expiresAt: now });
    await expectAgentError(
      claim.commit(record(sessionId, 1)),
      "ABORTED",
      /^the invocation lost session "[^"]+"; its turn was not written$/,
    );
  });

  it("keeps the head it last held after losing the session at a refresh", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId, {}, { refreshMs: 2 });
    const held = await claim.acquire("reject");
    const lost = deferred<AgentError>();
    claim.whenLost((err) => lost.resolve(err));
    await setLease(store, sessionId, { invocationId: "elsewhere", expiresAt: Date.now() + 60_000 });
    await lost.promise;
    expect(claim.currentHead).toEqual(held);
  });

  it("stops refreshing its lease once it lost the session", async () => {
    fakeRefreshTimer();
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    expect(vi.getTimerCount()).toBe(1);
    claim.interruptedBy("other");
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("SessionClaim lease refresh", () => {
  it("does not keep the process alive with its refresh timer", async () => {
    const setIntervalSpy = vi.spyOn(globalThis, "setInterval");
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const timer = setIntervalSpy.mock.results.at(-1)!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    await claim.release();
  });

  it("extends the lease to a full time-to-live from the time of the refresh", async () => {
    fakeRefreshTimer(true);
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    const held = await claim.acquire("reject");
    await vi.advanceTimersByTimeAsync(DEFAULT_CLAIM_SETTINGS.refreshMs);
    await settle();
    const head = (await store.getHead(sessionId))!;
    expect(head.lease).toEqual({
      invocationId: claim.invocationId,
      expiresAt: held.lease!.expiresAt + DEFAULT_CLAIM_SETTINGS.refreshMs,
      holder: leaseHolder().holder, // this process (issue 47: a restart recognises a dead holder)
    });
    await claim.release();
  });

  it("keeps the waiters that joined since the claim last read the head", async () => {
    fakeRefreshTimer();
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    const held = await claim.acquire("reject");
    await patchHead(store, sessionId, { waiters: [{ invocationId: "w", expiresAt: Date.now() + 60_000 }] });
    await vi.advanceTimersByTimeAsync(DEFAULT_CLAIM_SETTINGS.refreshMs);
    await settle();
    const head = (await store.getHead(sessionId))!;
    expect(head.version).toBe(held.version + 2);
    expect(head.waiters!.map((w) => w.invocationId)).toEqual(["w"]);
    await claim.release();
  });

  it("gives up a refresh after 200 refused writes", async () => {
    fakeRefreshTimer();
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    let refuse = false;
    const store = hookedStore(memory, (commit) => (refuse && commit.head.lease ? "refuse" : "write"));
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    refuse = true;
    const before = store.commits.length;
    await vi.advanceTimersByTimeAsync(DEFAULT_CLAIM_SETTINGS.refreshMs);
    await claim.release(); // runs after the refresh
    const refreshes = store.commits.slice(before).filter((commit) => commit.head.lease);
    expect(refreshes).toHaveLength(200);
  });

  it("writes nothing when a refresh comes due while the claim is being released", async () => {
    fakeRefreshTimer();
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const gate = deferred();
    let hold = false;
    const store = hookedStore(memory, async (): Promise<"write"> => {
      if (hold) await gate.promise;
      return "write";
    });
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    hold = true;
    const before = store.commits.length;
    const adding = claim.addUsage(u(1, 1)); // holds the claim's queue
    await vi.advanceTimersByTimeAsync(DEFAULT_CLAIM_SETTINGS.refreshMs); // a refresh queues behind it
    const releasing = claim.release();
    gate.resolve();
    await adding;
    await releasing;
    const writes = store.commits.slice(before);
    expect(writes).toHaveLength(2);
    expect(writes[1]!.head.lease).toBeUndefined();
    expect((await memory.getHead(sessionId))!.lease).toBeUndefined();
  });
});

describe("SessionClaim.release (upkeep)", () => {
  it("stops refreshing the lease", async () => {
    fakeRefreshTimer();
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    expect(vi.getTimerCount()).toBe(1);
    await claim.release();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("leaves the running invocation's lease alone after a refused REJECT", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const running = await setLease(store, sessionId, { invocationId: "running", expiresAt: Date.now() + 60_000 });
    const claim = claimOf(store, sessionId);
    await expectAgentError(claim.acquire("reject"), "ABORTED", /is busy/);
    await claim.release();
    expect(await store.getHead(sessionId)).toEqual(running);
  });

  it("writes nothing for a claim that lost its session, even with the lease still under its name", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await appendRecord(store, sessionId, { status: "completed", turnIndex: 1 });
    await expectAgentError(claim.commit(record(sessionId, 2)), "ABORTED", /moved to snapshot/);
    const before = await store.getHead(sessionId);
    await claim.release();
    expect(await store.getHead(sessionId)).toEqual(before);
  });

  it("gives up removing its lease after 200 refused writes, without throwing", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const store = hookedStore(memory, (commit) => (commit.head.lease ? "write" : "refuse"));
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await claim.release();
    expect(store.commits.filter((commit) => !commit.head.lease)).toHaveLength(200);
    expect((await memory.getHead(sessionId))!.lease!.invocationId).toBe(claim.invocationId);
  });

  it("is no longer told of an INTERRUPT in this process, even when its lease could not be removed", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const store = hookedStore(memory, (commit) => {
      if (!commit.head.lease) throw new Error("store unavailable");
      return "write";
    });
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const lost: AgentError[] = [];
    claim.whenLost((err) => lost.push(err));
    await claim.release();
    expect((await memory.getHead(sessionId))!.lease!.invocationId).toBe(claim.invocationId);
    const interrupter = claimOf(store, sessionId);
    await interrupter.acquire("interrupt");
    expect(lost).toEqual([]);
  });
});
