// SessionClaim.acquire per busy policy: who gets a free session, how an ENQUEUE
// waiter keeps and leaves its place in line. (Commits: session-claim.test.ts.)
import { afterEach, describe, expect, it, vi } from "vitest";
import { claimOf, existingSession, hookedStore, patchHead } from "./claim-fixtures.js";
import { expectAgentError, setLease, until } from "./runtime-fixtures.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

vi.setConfig({ testTimeout: 5_000 });

afterEach(() => {
  vi.restoreAllMocks();
});

/** Freezes `Date.now()` at the returned clock's `now` (timers keep running in real time). */
function frozenClock(): { now: number } {
  const clock = { now: Date.now() };
  vi.spyOn(Date, "now").mockImplementation(() => clock.now);
  return clock;
}

async function lineOf(store: SessionStore, sessionId: string): Promise<string[]> {
  return ((await store.getHead(sessionId))!.waiters ?? []).map((w) => w.invocationId);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `predicate` for up to about two seconds of real time (for tests that freeze `Date.now()`). */
async function waitFor(predicate: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await predicate()) return;
    await sleep(5);
  }
  throw new Error("gave up waiting");
}

describe("SessionClaim.acquire: who may take a session", () => {
  it("treats a lease as void from the instant it expires", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const clock = frozenClock();
    await setLease(memory, sessionId, { invocationId: "stalled", expiresAt: clock.now });
    const claim = claimOf(memory, sessionId);
    const head = await claim.acquire("reject");
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    await claim.release();
  });

  it("ENQUEUE: treats a place in line as void from the instant it expires, and drops it", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const clock = frozenClock();
    await patchHead(memory, sessionId, {
      waiters: [
        { invocationId: "gone", expiresAt: clock.now - 1_000 },
        { invocationId: "just-gone", expiresAt: clock.now },
      ],
    });
    const claim = claimOf(memory, sessionId, {}, { pollMs: 5 });
    const head = await claim.acquire("enqueue", AbortSignal.timeout(1_000));
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    expect(head.waiters).toBeUndefined();
    await claim.release();
  });

  it("REJECT takes a free session even while ENQUEUE waiters are in line, leaving them in line", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    await patchHead(memory, sessionId, { waiters: [{ invocationId: "waiting", expiresAt: Date.now() + 60_000 }] });
    const claim = claimOf(memory, sessionId, {}, { pollMs: 5 });
    const head = await claim.acquire("reject", AbortSignal.timeout(1_000));
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    expect(head.waiters!.map((w) => w.invocationId)).toEqual(["waiting"]);
    await claim.release();
  });

  it("ENQUEUE: takes a free session nobody waits for without ever joining the line", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const store = hookedStore(memory);
    const claim = claimOf(store, sessionId);
    await claim.acquire("enqueue");
    expect(store.commits).toHaveLength(1);
    expect(store.commits[0]!.head.waiters).toBeUndefined();
    await claim.release();
  });

  it("ENQUEUE: re-checks a free session right after joining its line, not only at its next poll", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    await patchHead(memory, sessionId, { waiters: [{ invocationId: "first", expiresAt: Date.now() + 60_000 }] });
    // The first waiter gives up right after the newcomer joined behind it.
    const store = hookedStore(memory, undefined, async (commit, stored) => {
      if (stored && commit.head.waiters?.length === 2) {
        await patchHead(memory, sessionId, { waiters: stored.waiters!.filter((w) => w.invocationId !== "first") });
      }
    });
    const newcomer = claimOf(store, sessionId, {}, { pollMs: 60_000 });
    const head = await newcomer.acquire("enqueue", AbortSignal.timeout(1_000));
    expect(head.lease!.invocationId).toBe(newcomer.invocationId);
    await newcomer.release();
  });

  it("REJECT: a refused call removes nothing from the line, not even an entry under its own invocation", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const claim = claimOf(memory, sessionId);
    await setLease(memory, sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const waiters = [{ invocationId: claim.invocationId, expiresAt: Date.now() + 60_000 }];
    const before = await patchHead(memory, sessionId, { waiters });
    await expectAgentError(claim.acquire("reject"), "ABORTED", /is busy: invocation "holder"/);
    expect(await memory.getHead(sessionId)).toEqual(before);
  });
});

describe("SessionClaim.acquire: an ENQUEUE waiter's place in line", () => {
  it("keeps its place ahead of later waiters when it refreshes its entry", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const clock = frozenClock();
    await setLease(memory, sessionId, { invocationId: "holder", expiresAt: clock.now + 60_000 });
    const call = new AbortController();
    const waiter = claimOf(memory, sessionId, {}, { leaseTtlMs: 1_000, pollMs: 1 });
    const waiting = waiter.acquire("enqueue", call.signal);
    await waitFor(async () => (await lineOf(memory, sessionId)).length === 1);
    const line = (await memory.getHead(sessionId))!.waiters!;
    await patchHead(memory, sessionId, {
      waiters: [...line, { invocationId: "later", expiresAt: clock.now + 60_000 }],
    });
    const start = clock.now;
    clock.now = start + 600; // less than half of its entry's time-to-live left
    await waitFor(async () => (await memory.getHead(sessionId))!.waiters![0]!.expiresAt === start + 1_600);
    expect(await lineOf(memory, sessionId)).toEqual([waiter.invocationId, "later"]);
    call.abort(new Error("done"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED");
  });

  it("refreshes its entry only once less than half of its time-to-live is left", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    const clock = frozenClock();
    await setLease(memory, sessionId, { invocationId: "holder", expiresAt: clock.now + 60_000 });
    const call = new AbortController();
    const waiter = claimOf(memory, sessionId, {}, { leaseTtlMs: 1_000, pollMs: 1 });
    const waiting = waiter.acquire("enqueue", call.signal);
    await waitFor(async () => (await lineOf(memory, sessionId)).length === 1);
    const entryOf = async (): Promise<number> => (await memory.getHead(sessionId))!.waiters![0]!.expiresAt;
    const start = clock.now;
    expect(await entryOf()).toBe(start + 1_000);
    clock.now = start + 500;
    await sleep(30); // many polls
    expect(await entryOf()).toBe(start + 1_000);
    clock.now = start + 501;
    await waitFor(async () => (await entryOf()) === start + 1_501);
    call.abort(new Error("done"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED");
  });

  it("leaves the line when it gives up, keeping the holder's lease and the other waiters' places", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    await setLease(memory, sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    await patchHead(memory, sessionId, { waiters: [{ invocationId: "ahead", expiresAt: Date.now() + 60_000 }] });
    const call = new AbortController();
    const waiter = claimOf(memory, sessionId, {}, { pollMs: 60_000 });
    const waiting = waiter.acquire("enqueue", call.signal);
    await until(async () => (await lineOf(memory, sessionId)).length === 2, "the waiter to queue");
    const line = (await memory.getHead(sessionId))!.waiters!;
    await patchHead(memory, sessionId, {
      waiters: [...line, { invocationId: "behind", expiresAt: Date.now() + 60_000 }],
    });
    call.abort(new Error("deadline"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED", /gave up waiting for busy session/);
    const head = (await memory.getHead(sessionId))!;
    expect(head.waiters!.map((w) => w.invocationId)).toEqual(["ahead", "behind"]);
    expect(head.lease!.invocationId).toBe("holder");
  });

  it("writes nothing when it gives up after its place in line was already gone", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    await setLease(memory, sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    await patchHead(memory, sessionId, { waiters: [{ invocationId: "ahead", expiresAt: Date.now() + 60_000 }] });
    const call = new AbortController();
    const waiter = claimOf(memory, sessionId, {}, { pollMs: 60_000 });
    const waiting = waiter.acquire("enqueue", call.signal);
    await until(async () => (await lineOf(memory, sessionId)).length === 2, "the waiter to queue");
    const line = (await memory.getHead(sessionId))!.waiters!;
    const before = await patchHead(memory, sessionId, { waiters: line.filter((w) => w.invocationId === "ahead") });
    call.abort(new Error("deadline"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED");
    expect(await memory.getHead(sessionId)).toEqual(before);
  });

  it("tries 20 times to leave the line when its writes keep being refused, then gives up", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    await setLease(memory, sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    let refuse = false;
    const store = hookedStore(memory, () => (refuse ? "refuse" : "write"));
    const call = new AbortController();
    const waiter = claimOf(store, sessionId, {}, { pollMs: 60_000 });
    const waiting = waiter.acquire("enqueue", call.signal);
    await until(async () => (await lineOf(memory, sessionId)).length === 1, "the waiter to queue");
    refuse = true;
    const queuedWrites = store.commits.length;
    call.abort(new Error("deadline"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED");
    expect(store.commits.length - queuedWrites).toBe(20);
    expect(await lineOf(memory, sessionId)).toEqual([waiter.invocationId]);
  });
});
