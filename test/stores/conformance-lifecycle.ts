import { describe, expect, it } from "vitest";
import { hasSessionLifecycle, type SessionHead, type SessionLifecycleStore } from "../../stores/snapshot-store.js";
import type { StoreUnderTest } from "./conformance.js";
import {
  allRecords,
  checkpointRecord,
  commitOf,
  commitRecord,
  ids,
  pendingRecord,
  sleep,
  T0,
  type CounterState,
} from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";
import { until } from "../harness/until.js";

type Store = SessionLifecycleStore<CounterState>;

/** The store under test with its lifecycle methods; every store must implement them (the test fails otherwise). */
async function lifecycleStore(fresh: () => Promise<StoreUnderTest>): Promise<StoreUnderTest & { store: Store }> {
  const t = await fresh();
  if (!hasSessionLifecycle(t.store))
    throw new Error("the store does not implement listHeads/deleteSession/sweepExpired");
  return t as StoreUnderTest & { store: Store };
}

/** What a seeded session looks like. */
interface SeedOptions {
  /** Records committed (a chain: checkpoint, then checkpoints with parent links). Default 1. */
  records?: number;
  /** updatedAt of the final head (the last record's createdAt). Default T0. */
  at?: number;
  owner?: string;
  agent?: string;
  labels?: Record<string, string>;
  ttlMs?: number;
}

/** Creates a session with `records` records; the head ends at `at`. Returns the head and the record IDs (oldest first). */
async function seed(
  store: Store,
  sessionId: string,
  options: SeedOptions = {},
): Promise<{ head: SessionHead; snapshotIds: string[] }> {
  const count = options.records ?? 1;
  const at = options.at ?? T0;
  let head: SessionHead | undefined;
  const snapshotIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const snapshotId = `${sessionId}-r${i}`;
    const parentId = snapshotIds[snapshotIds.length - 1];
    const record = checkpointRecord(sessionId, snapshotId, {
      turnIndex: i,
      createdAt: at - (count - 1 - i),
      ...(parentId ? { parentId } : {}),
    });
    const commit = commitOf(head, record);
    if (!head) {
      commit.head = {
        ...commit.head,
        owner: options.owner ?? "",
        agent: options.agent ?? "counter",
        ...(options.labels ? { labels: options.labels } : {}),
        ...(options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {}),
      };
    }
    const stored = await store.commit(commit);
    if (!stored) throw new Error(`seeding ${snapshotId} conflicted`);
    head = stored;
    snapshotIds.push(snapshotId);
  }
  return { head: head!, snapshotIds };
}

/** Every page of a listing (bounded, so a token loop fails the test instead of hanging it). */
async function listAll(store: Store, query: Parameters<Store["listHeads"]>[0]): Promise<SessionHead[]> {
  const heads: SessionHead[] = [];
  let pageToken: string | undefined;
  let pages = 0;
  do {
    const page = await store.listHeads({ ...query, ...(pageToken ? { pageToken } : {}) });
    heads.push(...page.heads);
    pageToken = page.nextPageToken;
    if (++pages > 500) throw new Error("listHeads keeps returning page tokens");
  } while (pageToken);
  return heads;
}

const sessionIds = (heads: readonly SessionHead[]): string[] => heads.map((h) => h.sessionId);

/** Newest updatedAt first, then the greater sessionId: the order listHeads must return. */
const newestFirst = (a: SessionHead, b: SessionHead): number =>
  a.updatedAt !== b.updatedAt
    ? b.updatedAt - a.updatedAt
    : a.sessionId < b.sessionId
      ? 1
      : a.sessionId > b.sessionId
        ? -1
        : 0;

/** Asserts the session is gone through every read of the contract. */
async function expectGone(store: Store, sessionId: string, snapshotIds: readonly string[]): Promise<void> {
  expect(await store.getHead(sessionId)).toBeUndefined();
  for (const id of snapshotIds) {
    expect(await store.getRecord(id), `record ${id}`).toBeUndefined();
    expect(await store.getChain(id), `chain of ${id}`).toBeUndefined();
  }
  expect(await store.listRecords(sessionId)).toEqual({ records: [] });
  expect(sessionIds(await listAll(store, { owner: "", now: 0 }))).not.toContain(sessionId);
}

/**
 * Session lifecycle (issue 17): listHeads (owner scoping, filters, order,
 * keyset paging under concurrent inserts), deleteSession (nothing left
 * behind, idempotent, safe against racing writes), expiry (ttlMs →
 * expiresAt, hidden from listings, sweepExpired). Runs only for stores that
 * implement the methods; the nothing-left-behind checks compare the store's
 * `footprint()` when the factory provides one.
 */
export function describeLifecycle(fresh: () => Promise<StoreUnderTest>): void {
  describe("session lifecycle", () => {
    describe("head fields (headToStore)", () => {
      it("stores labels and ttlMs as given and computes expiresAt = updatedAt + ttlMs on every head write", async () => {
        const { store } = await lifecycleStore(fresh);
        const record = checkpointRecord("s1", "root", { createdAt: T0 });
        const commit = commitOf(undefined, record);
        const labels = { env: "prod", "team.name_x-1": "", ["k" + "a".repeat(62)]: "v".repeat(256) };
        const head = { ...commit.head, labels, ttlMs: 60_000, expiresAt: 1 }; // a caller's expiresAt is ignored
        const stored = await store.commit({ ...commit, head });
        const expected = { ...structuredClone(head), version: 1, expiresAt: T0 + 60_000 };
        expect(stored).toEqual(expected);
        expect(await store.getHead("s1")).toEqual(expected);

        const next = checkpointRecord("s1", "next", { parentId: "root", turnIndex: 1, createdAt: T0 + 500 });
        const moved = await store.commit(commitOf(stored, next));
        expect(moved).toMatchObject({ version: 2, updatedAt: T0 + 500, expiresAt: T0 + 500 + 60_000, labels });

        // Without ttlMs the head has no expiry, whatever expiresAt the caller carries over; without labels it has none.
        const { ttlMs: _ttl, labels: _labels, version: _v, ...rest } = moved!;
        const cleared = await store.commit({ expectedVersion: 2, head: { ...rest, updatedAt: T0 + 600 } });
        expect(cleared).toEqual({ ...structuredClone(rest), updatedAt: T0 + 600, version: 3, expiresAt: undefined });
        const read = (await store.getHead("s1"))!;
        expect(read.expiresAt).toBeUndefined();
        expect(read.ttlMs).toBeUndefined();
        expect(read.labels).toBeUndefined();
      });

      it("accepts 64 labels but rejects bad labels and ttlMs with INVALID_ARGUMENT, writing nothing", async () => {
        const { store } = await lifecycleStore(fresh);
        const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, "x"]));
        const bad: Record<string, unknown>[] = [
          { labels: { Env: "x" } },
          { labels: { "1abc": "x" } },
          { labels: { "": "x" } },
          { labels: { "a b": "x" } },
          { labels: { ["k" + "a".repeat(63)]: "x" } },
          { labels: { a: "x".repeat(257) } },
          { labels: { a: 5 } },
          { labels: many(65) },
          { labels: "env=prod" },
          { labels: null },
          { ttlMs: 0 },
          { ttlMs: -50 },
          { ttlMs: 1.5 },
          { ttlMs: Number.NaN },
          { ttlMs: Number.POSITIVE_INFINITY },
          { ttlMs: "100" },
        ];
        for (const [i, fields] of bad.entries()) {
          const commit = commitOf(undefined, checkpointRecord(`bad-${i}`, `bad-${i}-r0`));
          await expect(
            store.commit({ ...commit, head: { ...commit.head, ...fields } }),
            JSON.stringify(fields),
          ).rejects.toMatchObject({
            status: "INVALID_ARGUMENT",
          });
          expect(await store.getHead(`bad-${i}`)).toBeUndefined();
          expect(await store.getRecord(`bad-${i}-r0`)).toBeUndefined();
        }
        const { head } = await seed(store, "ok", { labels: { ...many(63), emoji: "😀".repeat(256) } });
        expect(Object.keys(head.labels!)).toHaveLength(64);
      });
    });

    describe("deleteSession", () => {
      it("removes the head, every record and everything else stored for the session, and only that session", async () => {
        const { store, footprint } = await lifecycleStore(fresh);
        const kept = await seed(store, "kept", { records: 2, labels: { keep: "yes" } });
        const keptRecords = await allRecords(store, "kept");
        const baseline = await footprint?.();

        const doomed = await seed(store, "doomed", { records: 3, at: T0 + 10, labels: { keep: "no" }, ttlMs: 60_000 });
        await store.updateRecord(doomed.snapshotIds[1]!, (e) => ({ ...e, heartbeatAt: T0 + 5 }));
        if (footprint) expect(await footprint()).not.toEqual(baseline);

        expect(await store.deleteSession("doomed")).toBe(true);
        await expectGone(store, "doomed", doomed.snapshotIds);
        if (footprint) expect(await footprint()).toEqual(baseline);
        expect(await store.updateRecord(doomed.snapshotIds[2]!, (e) => ({ ...e, heartbeatAt: 1 }))).toBeNull();
        // Idempotent: nothing left to remove.
        expect(await store.deleteSession("doomed")).toBe(false);
        expect(await store.deleteSession("never-existed")).toBe(false);
        if (footprint) expect(await footprint()).toEqual(baseline);
        // The other session is untouched.
        expect(await store.getHead("kept")).toEqual(kept.head);
        expect(await allRecords(store, "kept")).toEqual(keptRecords);
        expect(ids((await store.getChain(kept.snapshotIds[1]!))!)).toEqual(["kept-r1"]);
        expect(sessionIds(await listAll(store, { owner: "" }))).toEqual(["kept"]);
      });

      it("removes a pending record (a detached run in flight) too, and a late heartbeat does not bring it back", async () => {
        const { store, footprint, openResources } = await lifecycleStore(fresh);
        await seed(store, "kept");
        const baseline = await footprint?.();
        const { head } = await seed(store, "doomed", { at: T0 + 1 });
        await commitRecord(
          store,
          head,
          pendingRecord("doomed", "doomed-bg", { parentId: "doomed-r0", turnIndex: 1, createdAt: T0 + 2 }),
        );
        expect((await store.getHead("doomed"))?.headSnapshotId).toBe("doomed-bg");
        const watcher = recordStatuses(store, "doomed-bg");
        try {
          expect(await store.deleteSession("doomed")).toBe(true);
          expect(await store.getRecord("doomed-bg")).toBeUndefined();
          // The run's heartbeat and finalizer find nothing to write.
          expect(
            await store.updateRecord("doomed-bg", (e) =>
              e.status === "pending" ? { ...e, heartbeatAt: T0 + 3 } : null,
            ),
          ).toBeNull();
          expect(await store.updateRecord("doomed-bg", (e) => ({ ...e, status: "aborted" }))).toBeNull();
        } finally {
          await watcher.stop();
        }
        await expectGone(store, "doomed", ["doomed-r0", "doomed-bg"]);
        expect(openResources()).toBe(0);
        if (footprint) expect(await footprint()).toEqual(baseline);
      });

      it("never leaves records without a head when a commit or record update races the delete", async () => {
        const { store, footprint } = await lifecycleStore(fresh);
        await seed(store, "kept");
        const baseline = await footprint?.();
        for (let round = 0; round < 6; round++) {
          const sessionId = `race-${round}`;
          const { head, snapshotIds } = await seed(store, sessionId, { records: 2, at: T0 + 10 });
          const next = checkpointRecord(sessionId, `${sessionId}-next`, {
            parentId: snapshotIds[1]!,
            turnIndex: 2,
            createdAt: T0 + 11,
          });
          const racers: Promise<unknown>[] = [
            store.commit(commitOf(head, next)),
            store.updateRecord(snapshotIds[0]!, (e) => ({ ...e, heartbeatAt: T0 + round })),
            store.updateRecord(snapshotIds[1]!, (e) => ({ ...e, heartbeatAt: T0 + round })),
          ];
          // Alternate who starts first.
          const deleted =
            round % 2 === 0 ? store.deleteSession(sessionId) : sleep(0).then(() => store.deleteSession(sessionId));
          const [removed] = await Promise.all([deleted, ...racers]);
          expect(removed).toBe(true);
          await expectGone(store, sessionId, [...snapshotIds, `${sessionId}-next`]);
        }
        if (footprint) expect(await footprint()).toEqual(baseline);
      });

      it("lets a commit on expectedVersion 0 create a fresh session after the delete, holding only its own records", async () => {
        const { store } = await lifecycleStore(fresh);
        const old = await seed(store, "s1", { records: 2, labels: { gen: "1" } });
        // A writer that read the old head loses its version check.
        const stale = checkpointRecord("s1", "stale", { parentId: "s1-r1", turnIndex: 2, createdAt: T0 + 5 });
        expect(await store.deleteSession("s1")).toBe(true);
        expect(await store.commit(commitOf(old.head, stale))).toBeUndefined();
        expect(await store.getRecord("stale")).toBeUndefined();
        expect(await store.getHead("s1")).toBeUndefined();
        const reborn = await commitRecord(store, undefined, checkpointRecord("s1", "reborn", { createdAt: T0 + 6 }));
        expect(reborn).toMatchObject({ version: 1, turnCount: 1, headSnapshotId: "reborn" });
        expect(reborn.labels).toBeUndefined();
        expect(ids(await allRecords(store, "s1"))).toEqual(["reborn"]);
      });
    });

    describe("expiry", () => {
      it("leaves a head out of listings once expiresAt <= now, and sweepExpired deletes it and only it", async () => {
        const { store, footprint } = await lifecycleStore(fresh);
        const U = T0 + 1000;
        await seed(store, "forever", { at: U });
        const later = await seed(store, "later", { at: U, ttlMs: 10_000 });
        const baseline = await footprint?.();
        const short = await seed(store, "short", { records: 2, at: U, ttlMs: 50 });
        expect(short.head.expiresAt).toBe(U + 50);
        expect(later.head.expiresAt).toBe(U + 10_000);

        const listed = async (now: number) => sessionIds(await listAll(store, { owner: "", now })).sort();
        expect(await listed(U + 49)).toEqual(["forever", "later", "short"]);
        expect(await listed(U + 50)).toEqual(["forever", "later"]);
        expect(await listed(U + 10_000)).toEqual(["forever"]);

        expect(await store.sweepExpired(U + 49)).toBe(0);
        expect(await store.getHead("short")).toBeDefined();
        expect(await store.sweepExpired(U + 50)).toBe(1);
        await expectGone(store, "short", short.snapshotIds);
        expect(await store.getHead("later")).toEqual(later.head);
        expect(await store.getHead("forever")).toBeDefined();
        expect(await store.sweepExpired(U + 50)).toBe(0);
        if (footprint) expect(await footprint()).toEqual(baseline);
      });

      it("sweepExpired hands each expired head to beforeExpire while the session still exists, then deletes it", async () => {
        const { store } = await lifecycleStore(fresh);
        const U = T0 + 1000;
        await seed(store, "forever", { at: U });
        const short = await seed(store, "short", { at: U, ttlMs: 50, labels: { team: "blue" } });
        const seen: [SessionHead, SessionHead | undefined][] = [];
        const removed = await store.sweepExpired(U + 50, undefined, async (head) => {
          await sleep(20); // the deletion waits for the hook
          seen.push([head, await store.getHead(head.sessionId)]);
        });
        expect(removed).toBe(1);
        expect(seen).toEqual([[short.head, short.head]]);
        expect(await store.getHead("short")).toBeUndefined();
      });

      it("sweepExpired rejects and keeps the session when beforeExpire rejects; the next sweep hands it over again", async () => {
        const { store } = await lifecycleStore(fresh);
        const U = T0 + 1000;
        const short = await seed(store, "short", { at: U, ttlMs: 50 });
        const failing = store.sweepExpired(U + 50, undefined, () => Promise.reject(new Error("outbox down")));
        await expect(failing).rejects.toThrow("outbox down");
        expect(await store.getHead("short")).toEqual(short.head);
        const seen: string[] = [];
        expect(await store.sweepExpired(U + 50, undefined, async (head) => void seen.push(head.sessionId))).toBe(1);
        expect(seen).toEqual(["short"]);
      });

      it("sweepExpired keeps, and does not count, a session written while its beforeExpire ran (its expiry moved)", async () => {
        const { store } = await lifecycleStore(fresh);
        const U = T0 + 1000;
        const { head } = await seed(store, "renewed", { at: U, ttlMs: 50 });
        const removed = await store.sweepExpired(U + 50, undefined, async () => {
          const record = checkpointRecord("renewed", "renewed-r1", {
            parentId: "renewed-r0",
            turnIndex: 1,
            createdAt: U + 100,
          });
          await commitRecord(store, head, record);
        });
        expect(removed).toBe(0);
        expect((await store.getHead("renewed"))?.expiresAt).toBe(U + 150);
      });

      it("sweepExpired rejects a now that is not an epoch-millisecond number with INVALID_ARGUMENT naming it", async () => {
        const { store } = await lifecycleStore(fresh);
        await expect(store.sweepExpired(Number.NaN)).rejects.toMatchObject({
          status: "INVALID_ARGUMENT",
          message: expect.stringContaining("sweepExpired: now must be an epoch-millisecond number"),
        });
      });

      it("moves expiresAt with every head write, so an active session is not swept", async () => {
        const { store } = await lifecycleStore(fresh);
        const U = T0 + 1000;
        const { head } = await seed(store, "active", { at: U, ttlMs: 50 });
        const touched = await commitRecord(
          store,
          head,
          checkpointRecord("active", "active-r1", { parentId: "active-r0", turnIndex: 1, createdAt: U + 40 }),
        );
        expect(touched.expiresAt).toBe(U + 90);
        expect(await store.sweepExpired(U + 60)).toBe(0);
        expect(sessionIds(await listAll(store, { owner: "", now: U + 60 }))).toEqual(["active"]);
        expect(await store.sweepExpired(U + 90)).toBe(1);
        expect(await store.getHead("active")).toBeUndefined();
      });

      it("expires a session with a 50 ms ttl in real time (listHeads defaults now to the clock)", async () => {
        const { store } = await lifecycleStore(fresh);
        const start = Date.now();
        await seed(store, "ephemeral", { at: start, ttlMs: 50 });
        await seed(store, "durable", { at: start });
        expect(sessionIds(await listAll(store, { owner: "", now: start + 49 })).sort()).toEqual([
          "durable",
          "ephemeral",
        ]);
        await sleep(start + 60 - Date.now());
        expect(sessionIds(await listAll(store, { owner: "" }))).toEqual(["durable"]);
        expect(await store.sweepExpired(Date.now())).toBe(1);
        expect(await store.getHead("ephemeral")).toBeUndefined();
        expect(await store.getHead("durable")).toBeDefined();
      });
    });

    describe("listHeads", () => {
      it("lists only the owner's sessions, newest updated first (ties: greater sessionId), as getHead returns them", async () => {
        const { store } = await lifecycleStore(fresh);
        await seed(store, "a-old", { owner: "alice", at: T0 + 1 });
        await seed(store, "a-new", { owner: "alice", at: T0 + 9, labels: { env: "prod" }, ttlMs: 1_000_000 });
        await seed(store, "a-tie-1", { owner: "alice", at: T0 + 5 });
        await seed(store, "a-tie-2", { owner: "alice", at: T0 + 5, records: 3 });
        await seed(store, "b-1", { owner: "bob", at: T0 + 7 });
        await seed(store, "anon", { owner: "", at: T0 + 8 });
        const alice = await listAll(store, { owner: "alice", now: T0 });
        expect(sessionIds(alice)).toEqual(["a-new", "a-tie-2", "a-tie-1", "a-old"]);
        for (const head of alice) expect(head).toEqual(await store.getHead(head.sessionId));
        expect(sessionIds(await listAll(store, { owner: "bob", now: T0 }))).toEqual(["b-1"]);
        expect(sessionIds(await listAll(store, { owner: "", now: T0 }))).toEqual(["anon"]);
        expect(sessionIds(await listAll(store, { owner: "carol", now: T0 }))).toEqual([]);
        // Page by page the same order, with a token only while more remain.
        const first = await store.listHeads({ owner: "alice", pageSize: 3, now: T0 });
        expect(sessionIds(first.heads)).toEqual(["a-new", "a-tie-2", "a-tie-1"]);
        expect(first.nextPageToken).toEqual(expect.any(String));
        const second = await store.listHeads({ owner: "alice", pageSize: 3, pageToken: first.nextPageToken!, now: T0 });
        expect(sessionIds(second.heads)).toEqual(["a-old"]);
        expect(second.nextPageToken).toBeUndefined();
        const exact = await store.listHeads({ owner: "alice", pageSize: 4, now: T0 });
        expect(exact.heads).toHaveLength(4);
        expect(exact.nextPageToken).toBeUndefined();
      });

      it("filters by agent, by every given label (exact values) and by updatedAfter (strictly after)", async () => {
        const { store } = await lifecycleStore(fresh);
        await seed(store, "s1", { at: T0 + 1, agent: "chat", labels: { env: "prod", team: "a" } });
        await seed(store, "s2", { at: T0 + 2, agent: "chat", labels: { env: "prod", team: "b" } });
        await seed(store, "s3", { at: T0 + 3, agent: "chat", labels: { env: "dev", team: "a", empty: "" } });
        await seed(store, "s4", { at: T0 + 4, agent: "chat" });
        await seed(store, "s5", { at: T0 + 5, agent: "search", labels: { env: "prod", team: "a" } });
        await seed(store, "x1", { at: T0 + 6, owner: "other", agent: "chat", labels: { env: "prod", team: "a" } });
        const list = async (query: Omit<Parameters<Store["listHeads"]>[0], "owner">) =>
          sessionIds(await listAll(store, { owner: "", now: T0, ...query }));
        expect(await list({})).toEqual(["s5", "s4", "s3", "s2", "s1"]);
        expect(await list({ agent: "chat" })).toEqual(["s4", "s3", "s2", "s1"]);
        expect(await list({ agent: "search" })).toEqual(["s5"]);
        expect(await list({ agent: "nobody" })).toEqual([]);
        expect(await list({ labels: { env: "prod" } })).toEqual(["s5", "s2", "s1"]);
        expect(await list({ labels: { env: "prod", team: "a" } })).toEqual(["s5", "s1"]);
        expect(await list({ labels: { team: "a" }, agent: "chat" })).toEqual(["s3", "s1"]);
        expect(await list({ labels: { env: "pro" } })).toEqual([]);
        expect(await list({ labels: { empty: "" } })).toEqual(["s3"]); // an empty value matches only a label that is set to ""
        expect(await list({ labels: {} })).toEqual(["s5", "s4", "s3", "s2", "s1"]);
        expect(await list({ updatedAfter: T0 + 3 })).toEqual(["s5", "s4"]);
        expect(await list({ updatedAfter: T0 + 3, labels: { env: "prod" }, pageSize: 1 })).toEqual(["s5"]);
        expect(await list({ updatedAfter: T0 + 5 })).toEqual([]);
        await expect(store.listHeads({ owner: "", labels: { "Bad Key": "x" } })).rejects.toMatchObject({
          status: "INVALID_ARGUMENT",
        });
      });

      it("a label filter finds matches behind hundreds of sessions without the label, and a page that fills exactly still says more remain", async () => {
        const { store } = await lifecycleStore(fresh);
        // 206 sessions, newest first n205 … n0; five labelled among the newest 200 (a store may read those in
        // one batch), and the oldest one too.
        const labelled = new Set([100, 101, 102, 103, 104, 0]);
        const ids = Array.from({ length: 206 }, (_, i) => i);
        for (let i = 0; i < ids.length; i += 25)
          await Promise.all(
            ids
              .slice(i, i + 25)
              .map((n) =>
                seed(store, `n${n}`, { at: T0 + n, ...(labelled.has(n) ? { labels: { pick: "yes" } } : {}) }),
              ),
          );
        const query = { owner: "", labels: { pick: "yes" }, pageSize: 5, now: T0 };
        const first = await store.listHeads(query);
        expect(sessionIds(first.heads)).toEqual(["n104", "n103", "n102", "n101", "n100"]);
        expect(first.nextPageToken).toEqual(expect.any(String));
        const second = await store.listHeads({ ...query, pageToken: first.nextPageToken! });
        expect(sessionIds(second.heads)).toEqual(["n0"]);
        expect(second.nextPageToken).toBeUndefined();
      });

      it("rejects a page size below 1 and a page token it did not issue with INVALID_ARGUMENT", async () => {
        const { store } = await lifecycleStore(fresh);
        await seed(store, "s1");
        await seed(store, "s2", { at: T0 + 1 });
        for (const pageSize of [0, -1, 0.5, Number.NaN]) {
          await expect(store.listHeads({ owner: "", pageSize }), `pageSize ${pageSize}`).rejects.toMatchObject({
            status: "INVALID_ARGUMENT",
          });
        }
        for (const pageToken of ["garbage", "not a token!", Buffer.from("[1]").toString("base64url")]) {
          await expect(store.listHeads({ owner: "", pageToken }), `token ${pageToken}`).rejects.toMatchObject({
            status: "INVALID_ARGUMENT",
          });
        }
        const page = await store.listHeads({ owner: "", pageSize: 1, now: T0 });
        expect(sessionIds(page.heads)).toEqual(["s2"]);
        expect(
          sessionIds(
            (await store.listHeads({ owner: "", pageSize: 1, pageToken: page.nextPageToken!, now: T0 })).heads,
          ),
        ).toEqual(["s1"]);
      });

      it(
        "pages through every pre-existing session exactly once while 20 writers create sessions",
        { timeout: 120_000 },
        async () => {
          const { store } = await lifecycleStore(fresh);
          const PRE = 60;
          const pre: string[] = [];
          for (let i = 0; i < PRE; i++) {
            const id = `pre-${String(i).padStart(2, "0")}`;
            pre.push(id);
            await seed(store, id, { at: T0 + (i % 20) }); // ties of three: the tie-break crosses page boundaries
          }
          const defaultPage = await store.listHeads({ owner: "", now: T0 });
          expect(defaultPage.heads).toHaveLength(50);
          expect(defaultPage.nextPageToken).toEqual(expect.any(String));

          let paging = true;
          let created = 0;
          const WRITERS = 20;
          const PER_WRITER = 12;
          const writer = async (w: number): Promise<void> => {
            for (let k = 0; k < PER_WRITER && paging; k++) {
              // Half land ahead of every cursor (newer), half among the pre-existing ones (same updatedAt range).
              const at = k % 2 === 0 ? T0 + 100_000 + w * 100 + k : T0 + ((w + k) % 20);
              await seed(store, `new-${String(w).padStart(2, "0")}-${String(k).padStart(2, "0")}`, { at });
              created++;
              await new Promise((resolve) => setImmediate(resolve));
            }
          };
          const writers = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
          const listed: SessionHead[] = [];
          let pageToken: string | undefined;
          let pages = 0;
          try {
            do {
              const seen = created;
              const page = await store.listHeads({
                owner: "",
                pageSize: 7,
                now: T0,
                ...(pageToken ? { pageToken } : {}),
              });
              expect(page.heads.length).toBeLessThanOrEqual(7);
              listed.push(...page.heads);
              pageToken = page.nextPageToken;
              if (++pages > 100) throw new Error("listHeads keeps returning page tokens");
              // Let the writers commit three sessions between pages (until they are done): waited for, not
              // spun for a fixed count, so a slow disk or a loaded machine cannot leave the writers idle.
              await until(
                "the writers to commit between pages",
                () => created >= seen + 3 || created >= WRITERS * PER_WRITER,
                { timeoutMs: 60_000, intervalMs: 5 },
              );
            } while (pageToken);
          } finally {
            paging = false;
            await writers;
          }
          expect(created).toBeGreaterThan(20); // the writers did run while paging
          const listedIds = sessionIds(listed);
          expect(new Set(listedIds).size).toBe(listedIds.length); // nothing twice
          expect(listedIds.filter((id) => id.startsWith("pre-")).sort()).toEqual(pre); // every pre-existing session once
          expect([...listed].sort(newestFirst)).toEqual(listed); // one consistent newest-first order across pages
          expect(pages).toBeGreaterThanOrEqual(Math.ceil(PRE / 7));
        },
      );
    });
  });
}
