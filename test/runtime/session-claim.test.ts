import { describe, expect, it, vi } from "vitest";
import { claimOf, existingSession, record } from "./claim-fixtures.js";
import { appendRecord, deferred, expectAgentError, setLease, until } from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { DEFAULT_CLAIM_SETTINGS } from "../../src/runtime/sessions/session-claim.js";
import type { HeadCommit, SessionStore } from "../../stores/snapshot-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

vi.setConfig({ testTimeout: 5_000 });

describe("SessionClaim.commit", () => {
  it("creates a new session with its first commit: agent, owner, labels, time-to-live, and its lease", async () => {
    const store = new InMemorySessionStore();
    const claim = claimOf(store, "s1", { owner: "t1", fresh: { labels: { k: "v" }, ttlMs: 60_000 } });
    claim.startFresh();
    const first = record("s1");
    const head = await claim.commit(first);
    expect(head).toMatchObject({
      sessionId: "s1",
      agent: "a",
      owner: "t1",
      headSnapshotId: first.snapshotId,
      turnCount: 1,
      version: 1,
      labels: { k: "v" },
      ttlMs: 60_000,
    });
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    expect(head.lease!.expiresAt).toBeGreaterThan(Date.now() + DEFAULT_CLAIM_SETTINGS.leaseTtlMs - 1_000);
    expect(claim.currentHead).toBe(head);
    expect(await store.getRecord(first.snapshotId)).toEqual(first);
    await claim.release();
  });

  it("moves the head of a held session to each new record, counting it", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const next = record(sessionId, 1);
    const head = await claim.commit(next);
    expect(head).toMatchObject({ headSnapshotId: next.snapshotId, turnCount: 2 });
    await claim.release();
  });

  it("retries after a conflict that only changed bookkeeping (a waiter joined) and commits", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const head = (await store.getHead(sessionId))!;
    const { version, ...rest } = head;
    await store.commit({
      expectedVersion: version,
      head: { ...rest, waiters: [{ invocationId: "w", expiresAt: Date.now() + 60_000 }] },
    });
    const next = record(sessionId, 1);
    const after = await claim.commit(next);
    expect(after).toMatchObject({ headSnapshotId: next.snapshotId, waiters: [{ invocationId: "w" }] });
    await claim.release();
  });

  it("refuses to commit (ABORTED, nothing written) once another invocation holds the lease", async () => {
    const store = new InMemorySessionStore();
    const { sessionId, snapshotId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const lost: AgentError[] = [];
    claim.whenLost((err) => lost.push(err));
    await setLease(store, sessionId, { invocationId: "thief", expiresAt: Date.now() + 60_000 });
    const next = record(sessionId, 1);
    const error = await expectAgentError(
      claim.commit(next),
      "ABORTED",
      /lost session ".+" to invocation "thief"; its turn was not written/,
    );
    expect(lost).toEqual([error]);
    expect(await store.getRecord(next.snapshotId)).toBeUndefined();
    expect((await store.getHead(sessionId))!.headSnapshotId).toBe(snapshotId);
    await expect(claim.commit(record(sessionId, 2))).rejects.toBe(error);
  });

  it("names no new holder when the lease was dropped rather than taken", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await setLease(store, sessionId, undefined);
    await expectAgentError(
      claim.commit(record(sessionId, 1)),
      "ABORTED",
      /^the invocation lost session "[^"]+"; its turn was not written$/,
    );
  });

  it("refuses to commit (ABORTED) when the head moved under the same lease", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const moved = await appendRecord(store, sessionId, { status: "completed", turnIndex: 1 });
    await expectAgentError(
      claim.commit(record(sessionId, 2)),
      "ABORTED",
      new RegExp(`moved to snapshot "${moved}"; the turn was not written`),
    );
  });

  it("refuses to commit (ABORTED) when the session was deleted", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await store.deleteSession(sessionId);
    await expectAgentError(claim.commit(record(sessionId, 1)), "ABORTED", /no longer exists/);
  });

  it("refuses the first commit of a new session (ABORTED) when another invocation created it first", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const late = claimOf(store, sessionId);
    late.startFresh();
    await expectAgentError(late.commit(record(sessionId)), "ABORTED", /was created by another invocation/);
  });

  it("tells a listener installed after the loss at once", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    claim.interruptedBy("other-invocation");
    const lost: AgentError[] = [];
    claim.whenLost((err) => lost.push(err));
    expect(lost).toHaveLength(1);
    expect(lost[0]!.status).toBe("ABORTED");
    expect(lost[0]!.message).toMatch(/interrupted: invocation "other-invocation" took over session/);
  });

  it("gives up with ABORTED after too many conflicting head updates", async () => {
    const memory = new InMemorySessionStore();
    const { sessionId } = await existingSession(memory);
    let conflicts = 0;
    const store: SessionStore = {
      getHead: (id) => memory.getHead(id),
      commit: async (commit: HeadCommit) => {
        if (commit.record) {
          conflicts++;
          return undefined;
        }
        return memory.commit(commit);
      },
      getRecord: (id) => memory.getRecord(id),
      getChain: (id) => memory.getChain(id),
      listRecords: (id, page) => memory.listRecords(id, page),
      updateRecord: (id, mutator) => memory.updateRecord(id, mutator),
    };
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await expectAgentError(
      claim.commit(record(sessionId, 1)),
      "ABORTED",
      /gave up committing after 200 concurrent head updates/,
    );
    expect(conflicts).toBe(200);
  });
});

describe("SessionClaim.acquire", () => {
  it("answers NOT_FOUND for a session that does not exist", async () => {
    await expectAgentError(
      claimOf(new InMemorySessionStore(), "nope").acquire("enqueue"),
      "NOT_FOUND",
      /session "nope" not found/,
    );
  });

  it("re-takes a session its own invocation already holds, under any policy", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await setLease(store, sessionId, { invocationId: claim.invocationId, expiresAt: Date.now() + 60_000 });
    const head = await claim.acquire("reject");
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    await claim.release();
  });

  it("ENQUEUE: takes a free session at once when nobody else waits", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    const head = await claim.acquire("enqueue");
    expect(head.lease!.invocationId).toBe(claim.invocationId);
    expect(head.waiters).toBeUndefined();
    await claim.release();
  });

  it("ENQUEUE: a free session goes to the first waiter in line, not to a newcomer", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const head = (await store.getHead(sessionId))!;
    const { version, ...rest } = head;
    await store.commit({
      expectedVersion: version,
      head: { ...rest, waiters: [{ invocationId: "first", expiresAt: Date.now() + 60_000 }] },
    });
    const newcomer = claimOf(store, sessionId, {}, { pollMs: 5 });
    const waiting = newcomer.acquire("enqueue");
    await until(async () => (await store.getHead(sessionId))!.waiters?.length === 2, "the newcomer to queue behind");
    expect((await store.getHead(sessionId))!.lease).toBeUndefined();
    // The first waiter gives up: the newcomer is first now.
    const now = (await store.getHead(sessionId))!;
    const { version: v2, ...rest2 } = now;
    await store.commit({
      expectedVersion: v2,
      head: { ...rest2, waiters: now.waiters!.filter((w) => w.invocationId !== "first") },
    });
    const taken = await waiting;
    expect(taken.lease!.invocationId).toBe(newcomer.invocationId);
    expect(taken.waiters).toBeUndefined();
    await newcomer.release();
  });

  it("ENQUEUE: refreshes its place in line before it runs out while it waits", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    await setLease(store, sessionId, { invocationId: "holder", expiresAt: Date.now() + 60_000 });
    const call = new AbortController();
    const waiter = claimOf(store, sessionId, {}, { leaseTtlMs: 40, refreshMs: 10, pollMs: 2 });
    const waiting = waiter.acquire("enqueue", call.signal);
    await until(async () => (await store.getHead(sessionId))!.waiters?.length === 1, "the waiter to queue");
    const joined = (await store.getHead(sessionId))!.waiters![0]!.expiresAt;
    const entryOf = async (): Promise<number> => (await store.getHead(sessionId))!.waiters![0]!.expiresAt;
    await until(async () => (await entryOf()) > joined, "the entry to be refreshed");
    expect((await store.getHead(sessionId))!.waiters!.map((w) => w.invocationId)).toEqual([waiter.invocationId]);
    call.abort(new Error("done"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED");
  });

  it("ENQUEUE: a release in this process wakes a local waiter at once (without waiting for its poll)", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const holder = claimOf(store, sessionId);
    await holder.acquire("reject");
    const waiter = claimOf(store, sessionId, {}, { pollMs: 60_000 });
    const waiting = waiter.acquire("enqueue");
    await until(async () => (await store.getHead(sessionId))!.waiters?.length === 1, "the waiter to queue");
    await holder.release();
    expect((await waiting).lease!.invocationId).toBe(waiter.invocationId);
    await waiter.release();
  });

  it("INTERRUPT: tells a holder in this process at once that it lost the session", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const holder = claimOf(store, sessionId);
    await holder.acquire("reject");
    const lost = deferred<AgentError>();
    holder.whenLost((err) => lost.resolve(err));
    const interrupter = claimOf(store, sessionId);
    await interrupter.acquire("interrupt");
    const error = await lost.promise;
    expect(error.status).toBe("ABORTED");
    expect(error.message).toContain(`invocation "${interrupter.invocationId}" took over session "${sessionId}"`);
    await holder.release(); // the lease is no longer the holder's: left alone
    expect((await store.getHead(sessionId))!.lease!.invocationId).toBe(interrupter.invocationId);
    await interrupter.release();
  });
});

describe("SessionClaim.release", () => {
  it("removes the lease, keeps the waiters, and is idempotent", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    const head = (await store.getHead(sessionId))!;
    const { version, ...rest } = head;
    await store.commit({
      expectedVersion: version,
      head: { ...rest, waiters: [{ invocationId: "w", expiresAt: Date.now() + 60_000 }] },
    });
    await claim.release();
    const released = (await store.getHead(sessionId))!;
    expect(released.lease).toBeUndefined();
    expect(released.waiters).toEqual([{ invocationId: "w", expiresAt: expect.any(Number) }]);
    await claim.release();
    expect((await store.getHead(sessionId))!.version).toBe(released.version);
  });

  it("leaves a lease that is no longer its own alone", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId);
    await claim.acquire("reject");
    await setLease(store, sessionId, { invocationId: "other", expiresAt: Date.now() + 60_000 });
    await claim.release();
    expect((await store.getHead(sessionId))!.lease!.invocationId).toBe("other");
  });

  it("does nothing for a claim that never wrote a head", async () => {
    const store = new InMemorySessionStore();
    const claim = claimOf(store, "s1");
    claim.startFresh();
    await claim.release();
    expect(store.sizes().heads).toBe(0);
  });
});

describe("SessionClaim refresh", () => {
  it("extends its lease periodically while held", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId, {}, { refreshMs: 2, leaseTtlMs: 10_000 });
    const head = await claim.acquire("reject");
    await until(async () => (await store.getHead(sessionId))!.version > head.version, "a refresh");
    const refreshed = (await store.getHead(sessionId))!;
    expect(refreshed.lease!.invocationId).toBe(claim.invocationId);
    expect(refreshed.lease!.expiresAt).toBeGreaterThanOrEqual(head.lease!.expiresAt);
    await claim.release();
  });

  it("notices at its next refresh that another process took the session, and loses the claim", async () => {
    const store = new InMemorySessionStore();
    const { sessionId } = await existingSession(store);
    const claim = claimOf(store, sessionId, {}, { refreshMs: 2, leaseTtlMs: 10_000 });
    await claim.acquire("reject");
    const lost = deferred<AgentError>();
    claim.whenLost((err) => lost.resolve(err));
    await setLease(store, sessionId, { invocationId: "elsewhere", expiresAt: Date.now() + 60_000 });
    expect((await lost.promise).message).toMatch(/to invocation "elsewhere"/);
  });
});
