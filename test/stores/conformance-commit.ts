import { describe, expect, it } from "vitest";
import type { SessionState } from "../../src/types/session-state.js";
import type { CheckpointPolicy } from "../../stores/ledger/checkpoint-policy.js";
import { MAX_COMMIT_TOKEN_LENGTH } from "../../stores/snapshot-store.js";
import type { StoreUnderTest } from "./conformance.js";
import { frozenMessage, turnRecord } from "./ledger-fixtures.js";
import {
  allRecords,
  checkpointRecord,
  commitOf,
  commitRecord,
  headAfter,
  ids,
  readState,
  T0,
  type CounterState,
} from "./snapshot-factory.js";

type State = SessionState<CounterState>;

/** commit: optimistic concurrency on the head version, atomic head + record writes, branches, head-only lease/waiter commits. */
export function describeCommit(fresh: () => Promise<StoreUnderTest>): void {
  describe("commit", () => {
    it("creates the session head at version 1 and its record with a commit on expectedVersion 0", async () => {
      const { store } = await fresh();
      const record = checkpointRecord("s1", "root", { heartbeatAt: 5, finishReason: "stop" });
      const head = headAfter(undefined, record);
      const expectedRecord = structuredClone(record);
      const expectedHead = { ...structuredClone(head), version: 1 };
      const committed = await store.commit({ expectedVersion: 0, head, record });
      expect(committed).toEqual(expectedHead);
      expect(await store.getHead("s1")).toEqual(expectedHead);
      expect(await store.getRecord("root")).toEqual(expectedRecord);
      expect(await store.listRecords("s1")).toEqual({ records: [expectedRecord] });
    });

    it("refuses a commit whose expectedVersion is not the stored version and writes nothing", async () => {
      const { store } = await fresh();
      let head = await commitRecord(store, undefined, checkpointRecord("s1", "a"));
      head = await commitRecord(
        store,
        head,
        checkpointRecord("s1", "b", { parentId: "a", turnIndex: 1, createdAt: T0 + 1 }),
      );
      const stored = structuredClone(head);
      const stale = await store.commit({
        ...commitOf(head, checkpointRecord("s1", "stale", { createdAt: T0 + 2 })),
        expectedVersion: 1,
      });
      const ahead = await store.commit({
        ...commitOf(head, checkpointRecord("s1", "ahead", { createdAt: T0 + 2 })),
        expectedVersion: 3,
      });
      expect(stale).toBeUndefined();
      expect(ahead).toBeUndefined();
      expect(await store.getHead("s1")).toEqual(stored);
      expect(await store.getRecord("stale")).toBeUndefined();
      expect(await store.getRecord("ahead")).toBeUndefined();
      expect(ids(await allRecords(store, "s1"))).toEqual(["b", "a"]);
    });

    it("lets exactly one of two commits on the same expectedVersion win and leaves no trace of the loser", async () => {
      const { store } = await fresh();
      const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      const [first, second] = await Promise.all([
        store.commit(
          commitOf(root, checkpointRecord("s1", "one", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 })),
        ),
        store.commit(
          commitOf(root, checkpointRecord("s1", "two", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 })),
        ),
      ]);
      expect([first, second].filter((h) => h !== undefined)).toHaveLength(1);
      const winner = (first ?? second)!;
      const [winnerId, loserId] = first ? ["one", "two"] : ["two", "one"];
      expect(winner).toMatchObject({ version: 2, headSnapshotId: winnerId, turnCount: 2 });
      expect(await store.getHead("s1")).toEqual(winner);
      expect(await store.getRecord(loserId!)).toBeUndefined();
      expect(await store.getChain(loserId!)).toBeUndefined();
      expect(ids(await allRecords(store, "s1")).sort()).toEqual([winnerId, "root"].sort());
    });

    it("refuses expectedVersion 0 for a session that exists", async () => {
      const { store } = await fresh();
      const head = await commitRecord(store, undefined, checkpointRecord("s1", "first"));
      const again = await store.commit(commitOf(undefined, checkpointRecord("s1", "second")));
      expect(again).toBeUndefined();
      expect(await store.getHead("s1")).toEqual(head);
      expect(await store.getRecord("second")).toBeUndefined();
    });

    it("rejects a commit whose record ID exists with ALREADY_EXISTS and leaves head and record as they were", async () => {
      const { store } = await fresh();
      const original = checkpointRecord("s1", "dup");
      const expected = structuredClone(original);
      const head = await commitRecord(store, undefined, original);
      const duplicate = checkpointRecord("s1", "dup", { turnIndex: 1, createdAt: T0 + 1, status: "failed" });
      await expect(store.commit(commitOf(head, duplicate))).rejects.toMatchObject({
        status: "ALREADY_EXISTS",
        message: expect.stringContaining("already exists; a commit needs a new snapshot ID"),
      });
      expect(await store.getHead("s1")).toEqual(head);
      expect(await store.getRecord("dup")).toEqual(expected);
      expect(await allRecords(store, "s1")).toEqual([expected]);
    });

    it("moves the head to a branch while the abandoned branch stays readable with its state", async () => {
      const { store } = await fresh();
      const policy: CheckpointPolicy = { minDeltaBytes: 1 << 20, ratio: 1, maxDepth: 100 };
      const stateA: State = { sessionId: "s1", messages: [frozenMessage("a")], artifacts: [], custom: { n: 0 } };
      const stateB: State = { ...stateA, messages: [...stateA.messages, frozenMessage("b")], custom: { n: 1 } };
      const stateC: State = {
        ...stateA,
        messages: [...stateA.messages, frozenMessage("c")],
        custom: { n: 2, items: ["c"] },
      };
      const base = { sessionId: "s1", policy };
      const a = turnRecord({
        ...base,
        snapshotId: "A",
        parent: undefined,
        prevState: { sessionId: "s1", messages: [], artifacts: [] },
        nextState: stateA,
        turnIndex: 0,
        createdAt: T0,
      });
      const b = turnRecord({
        ...base,
        snapshotId: "B",
        parent: a,
        prevState: stateA,
        nextState: stateB,
        turnIndex: 1,
        createdAt: T0 + 1,
      });
      const c = turnRecord({
        ...base,
        snapshotId: "C",
        parent: a,
        prevState: stateA,
        nextState: stateC,
        turnIndex: 1,
        createdAt: T0 + 2,
      });
      expect(b.delta).toBeDefined();
      expect(c.delta).toBeDefined();
      const expectedB = structuredClone(b);
      let head = await commitRecord(store, undefined, a);
      head = await commitRecord(store, head, b);
      head = await commitRecord(store, head, c);
      expect(head).toMatchObject({ headSnapshotId: "C", turnCount: 3, version: 3 });
      expect(await store.getHead("s1")).toEqual(head);
      expect(await store.getRecord("B")).toEqual(expectedB);
      expect(ids((await store.getChain("B"))!)).toEqual(["A", "B"]);
      expect(ids((await store.getChain("C"))!)).toEqual(["A", "C"]);
      expect(await readState(store, "B")).toEqual(structuredClone(stateB));
      expect(await readState(store, "C")).toEqual(structuredClone(stateC));
      expect(ids(await allRecords(store, "s1"))).toEqual(["C", "B", "A"]);
    });

    it("bumps the version with a head-only commit that sets and clears lease and waiters", async () => {
      const { store } = await fresh();
      const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      const { version: _v, ...rest } = head;
      const leased = {
        ...rest,
        updatedAt: T0 + 10,
        lease: { invocationId: "inv-1", expiresAt: T0 + 30_000, interruptedBy: "inv-3" },
        waiters: [
          { invocationId: "inv-2", expiresAt: T0 + 20_000 },
          { invocationId: "inv-3", expiresAt: T0 + 21_000 },
        ],
      };
      const expectedLeased = { ...structuredClone(leased), version: 2 };
      expect(await store.commit({ expectedVersion: 1, head: leased })).toEqual(expectedLeased);
      expect(await store.getHead("s1")).toEqual(expectedLeased);
      const released = await store.commit({ expectedVersion: 2, head: { ...rest, updatedAt: T0 + 20 } });
      expect(released).toEqual({ ...rest, updatedAt: T0 + 20, version: 3 });
      const read = (await store.getHead("s1"))!;
      expect(read).toEqual({ ...rest, updatedAt: T0 + 20, version: 3 });
      expect(read.lease).toBeUndefined();
      expect(read.waiters ?? []).toEqual([]);
      expect(ids(await allRecords(store, "s1"))).toEqual(["root"]);
    });

    it("records the commit's token on the head, and drops it on a head write that carries none", async () => {
      const { store } = await fresh();
      const root = checkpointRecord("s1", "root");
      const created = await store.commit({ ...commitOf(undefined, root), token: "req-1" });
      expect(created?.commitToken).toBe("req-1");
      expect((await store.getHead("s1"))?.commitToken).toBe("req-1");
      const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
      const moved = await store.commit({ ...commitOf(created, next), token: "t1" });
      expect((await store.getHead("s1"))?.commitToken).toBe("t1");
      const { version: _version, ...fields } = moved!; // still carries "t1"
      const bare = await store.commit({ expectedVersion: moved!.version, head: { ...fields, updatedAt: T0 + 2 } });
      expect(bare?.commitToken).toBeUndefined();
      expect((await store.getHead("s1"))?.commitToken).toBeUndefined();
    });

    it("refuses an empty or over-long commit token with INVALID_ARGUMENT and writes nothing", async () => {
      const { store } = await fresh();
      const root = checkpointRecord("s1", "root");
      for (const token of ["", "x".repeat(MAX_COMMIT_TOKEN_LENGTH + 1)]) {
        await expect(store.commit({ ...commitOf(undefined, root), token })).rejects.toMatchObject({
          status: "INVALID_ARGUMENT",
        });
      }
      expect(await store.getHead("s1")).toBeUndefined();
      expect(await store.getRecord("root")).toBeUndefined();
    });
  });
}
