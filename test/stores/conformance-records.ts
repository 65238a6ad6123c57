import { describe, expect, it } from "vitest";
import type { StoreUnderTest } from "./conformance.js";
import { allRecords, checkpointRecord, commitRecord, ids, pendingRecord, T0 } from "./snapshot-factory.js";

/** updateRecord: atomic read-modify-write of one record that loses no update and never changes its identity fields. */
export function describeRecords(fresh: () => Promise<StoreUnderTest>): void {
  describe("updateRecord", () => {
    it("loses no update under 20 concurrent increments of one record", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, checkpointRecord("s1", "counter"));
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          store.updateRecord("counter", (e) => ({ ...e, heartbeatAt: (e.heartbeatAt ?? 0) + 1 })),
        ),
      );
      expect(results.map((r) => r?.heartbeatAt).sort((x, y) => x! - y!)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      expect((await store.getRecord("counter"))!.heartbeatAt).toBe(20);
    });

    it("keeps snapshotId, sessionId, parentId and createdAt whatever the mutator returns", async () => {
      const { store } = await fresh();
      const root = checkpointRecord("s1", "root");
      const child = checkpointRecord("s1", "child", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
      const expectedRoot = structuredClone(root);
      const expectedChild = structuredClone(child);
      const head = await commitRecord(store, undefined, root);
      await commitRecord(store, head, child);
      const rewritten = await store.updateRecord("child", (e) => ({
        ...e,
        snapshotId: "hijack",
        sessionId: "other",
        parentId: "nowhere",
        createdAt: 1,
        status: "failed",
        heartbeatAt: 7,
        updatedAt: T0 + 9,
      }));
      const expectedRewrite = { ...expectedChild, status: "failed", heartbeatAt: 7, updatedAt: T0 + 9 };
      expect(rewritten).toEqual(expectedRewrite);
      expect(await store.getRecord("child")).toEqual(expectedRewrite);
      const rootRewrite = await store.updateRecord("root", (e) => ({ ...e, parentId: "child", heartbeatAt: 3 }));
      expect(rootRewrite).toEqual({ ...expectedRoot, heartbeatAt: 3 });
      expect((await store.getRecord("root"))!.parentId).toBeUndefined();
      expect(await store.getRecord("hijack")).toBeUndefined();
      expect(await allRecords(store, "other")).toEqual([]);
      expect(ids(await allRecords(store, "s1"))).toEqual(["child", "root"]);
    });

    it("returns null for a record that does not exist and creates nothing", async () => {
      const { store } = await fresh();
      const result = await store.updateRecord("missing", (e) => ({ ...e, status: "failed" }));
      expect(result).toBeNull();
      expect(await store.getRecord("missing")).toBeUndefined();
    });

    it("returns null and leaves the record unchanged when the mutator returns null", async () => {
      const { store } = await fresh();
      const record = pendingRecord("s1", "bg");
      const expected = structuredClone(record);
      await commitRecord(store, undefined, record);
      expect(await store.updateRecord("bg", () => null)).toBeNull();
      expect(await store.getRecord("bg")).toEqual(expected);
    });

    it("lets an abort that landed first win over a finalizer that re-checks status", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
      const abort = await store.updateRecord("bg", (e) =>
        e.status === "pending" ? { ...e, status: "aborted", finishReason: "aborted" } : null,
      );
      const finalize = await store.updateRecord("bg", (e) =>
        e.status === "pending" ? { ...e, status: "completed", finishReason: "stop" } : null,
      );
      expect(abort?.status).toBe("aborted");
      expect(finalize).toBeNull();
      expect(await store.getRecord("bg")).toMatchObject({ status: "aborted", finishReason: "aborted" });
    });

    it("applies exactly one of a concurrent abort and finalize", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
      const [abort, finalize] = await Promise.all([
        store.updateRecord("bg", (e) => (e.status === "pending" ? { ...e, status: "aborted" } : null)),
        store.updateRecord("bg", (e) => (e.status === "pending" ? { ...e, status: "completed" } : null)),
      ]);
      expect([abort, finalize].filter((r) => r !== null)).toHaveLength(1);
      const winner = (abort ?? finalize)!.status;
      expect((await store.getRecord("bg"))!.status).toBe(winner);
    });
  });
}
