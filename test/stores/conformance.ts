import { afterEach, describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import type { SessionSnapshot } from "../../src/types/snapshot.js";
import type { SessionStore, SnapshotSubscriber } from "../../stores/snapshot-store.js";
import { eventually, snapshotRow, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

/** What a store factory hands the conformance suite. */
export interface StoreUnderTest {
  store: SessionStore<CounterState> & SnapshotSubscriber;
  /** Open subscription resources (subscribers, watchers, change streams); 0 when idle. */
  openResources(): number;
  /** Extra teardown after `store.close()`. */
  cleanup?(): Promise<void>;
}

type Row = SessionSnapshot<CounterState>;

const bump = (existing: Row | undefined): Row => {
  const base = existing ?? snapshotRow("s-count");
  return { ...base, state: { ...base.state!, custom: { n: (base.state?.custom?.n ?? 0) + 1 } } };
};

/**
 * The behaviour every {@link SessionStore} must have. `factory` returns a
 * fresh, empty store for each test.
 */
export function runStoreConformance(name: string, factory: () => Promise<StoreUnderTest>): void {
  describe(`${name} store conformance`, () => {
    const opened: StoreUnderTest[] = [];
    afterEach(async () => {
      for (const t of opened.splice(0)) {
        await t.store.close?.();
        await t.cleanup?.();
      }
    });
    const fresh = async (): Promise<StoreUnderTest> => {
      const t = await factory();
      opened.push(t);
      return t;
    };

    it("round-trips a row unchanged", async () => {
      const { store } = await fresh();
      const row = snapshotRow("s1", { parentId: "p-0", turnIndex: 3, finishReason: "stop", heartbeatAt: 5 });
      const saved = await store.saveSnapshot("snap-1", () => row);
      expect(saved).toEqual({ ...row, snapshotId: "snap-1" });
      expect(await store.getSnapshot("snap-1")).toEqual(saved);
    });

    it("hands out copies that callers cannot alias", async () => {
      const { store } = await fresh();
      const saved = (await store.saveSnapshot("snap-1", () => snapshotRow("s1")))!;
      saved.state!.custom!.n = 42;
      const read = (await store.getSnapshot("snap-1"))!;
      read.state!.custom!.n = 43;
      expect((await store.getSnapshot("snap-1"))!.state!.custom!.n).toBe(0);
    });

    it("generates a distinct ID when none is given", async () => {
      const { store } = await fresh();
      const a = (await store.saveSnapshot(undefined, () => snapshotRow("s1")))!;
      const b = (await store.saveSnapshot(undefined, () => snapshotRow("s1")))!;
      expect(a.snapshotId).toMatch(/^[0-9a-f-]{36}$/);
      expect(b.snapshotId).not.toBe(a.snapshotId);
      expect(await store.getSnapshot(a.snapshotId)).toEqual(a);
    });

    it("keeps the sessionId of an existing row across rewrites", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("snap-1", () => snapshotRow("s1"));
      const rewritten = await store.saveSnapshot("snap-1", (e) => ({ ...e!, sessionId: "other", turnIndex: 9 }));
      expect(rewritten).toMatchObject({ sessionId: "s1", turnIndex: 9 });
      expect((await store.getSnapshot("snap-1"))!.sessionId).toBe("s1");
      expect(await store.getLatestSnapshot("other")).toBeUndefined();
    });

    it("returns the session's most recently created row as latest", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("a", () => snapshotRow("s1", { createdAt: 100 }));
      await store.saveSnapshot("c", () => snapshotRow("s1", { createdAt: 300 }));
      await store.saveSnapshot("b", () => snapshotRow("s1", { createdAt: 200 }));
      await store.saveSnapshot("z", () => snapshotRow("s2", { createdAt: 999 }));
      expect((await store.getLatestSnapshot("s1"))!.snapshotId).toBe("c");
    });

    it("breaks createdAt ties by the greater snapshotId", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("snap-b", () => snapshotRow("s1", { createdAt: 100 }));
      await store.saveSnapshot("snap-c", () => snapshotRow("s1", { createdAt: 100 }));
      await store.saveSnapshot("snap-a", () => snapshotRow("s1", { createdAt: 100 }));
      expect((await store.getLatestSnapshot("s1"))!.snapshotId).toBe("snap-c");
    });

    it("does not move a rewritten older row ahead of newer ones", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("old", () => snapshotRow("s1", { createdAt: 100, status: "pending" }));
      await store.saveSnapshot("new", () => snapshotRow("s1", { createdAt: 200 }));
      await store.saveSnapshot("old", (e) => ({ ...e!, status: "completed", updatedAt: 10_000 }));
      expect((await store.getLatestSnapshot("s1"))!.snapshotId).toBe("new");
    });

    it("gives the mutator a private copy, so a mutator that edits its input and skips leaves the row intact", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("snap-1", () => snapshotRow("s1"));
      const result = await store.saveSnapshot("snap-1", (existing) => {
        existing!.state!.custom!.n = 999;
        existing!.status = "failed";
        return null;
      });
      expect(result).toBeNull();
      expect(await store.getSnapshot("snap-1")).toMatchObject({ status: "completed", state: { custom: { n: 0 } } });
    });

    it("writes nothing when the mutator returns null for a new ID", async () => {
      const { store } = await fresh();
      expect(await store.saveSnapshot("snap-1", () => null)).toBeNull();
      expect(await store.getSnapshot("snap-1")).toBeUndefined();
      expect(await store.getLatestSnapshot("s1")).toBeUndefined();
    });

    it("loses no update under 20 concurrent increments of one row", async () => {
      const { store } = await fresh();
      await Promise.all(Array.from({ length: 20 }, () => store.saveSnapshot("counter", bump)));
      expect((await store.getSnapshot("counter"))!.state!.custom!.n).toBe(20);
    });

    it("lets an abort that landed first win over a finalizer that re-checks status", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
      const abort = await store.saveSnapshot("bg", (e) => (e?.status === "pending" ? { ...e, status: "aborted", finishReason: "aborted" } : null));
      const finalize = await store.saveSnapshot("bg", (e) => (e?.status === "pending" ? { ...e, status: "completed" } : null));
      expect(abort?.status).toBe("aborted");
      expect(finalize).toBeNull();
      expect((await store.getSnapshot("bg"))!.status).toBe("aborted");
    });

    it("applies exactly one of a concurrent abort and finalize", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
      const [abort, finalize] = await Promise.all([
        store.saveSnapshot("bg", (e) => (e?.status === "pending" ? { ...e, status: "aborted" } : null)),
        store.saveSnapshot("bg", (e) => (e?.status === "pending" ? { ...e, status: "completed" } : null)),
      ]);
      expect([abort === null, finalize === null].filter(Boolean)).toHaveLength(1);
      const winner = (abort ?? finalize)!.status;
      expect((await store.getSnapshot("bg"))!.status).toBe(winner);
    });

    it("tells a subscriber the current status, then every change in order without duplicates", async () => {
      const { store } = await fresh();
      await store.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
      const { seen, stop } = recordStatuses(store, "bg");
      await eventually(() => seen.length === 1);
      for (let i = 0; i < 3; i++) await store.saveSnapshot("bg", (e) => ({ ...e!, heartbeatAt: Date.now() + i }));
      await store.saveSnapshot("bg", (e) => ({ ...e!, status: "failed" }));
      await eventually(() => seen.length === 2);
      await store.saveSnapshot("bg", (e) => ({ ...e!, status: "completed" }));
      await eventually(() => seen.length === 3);
      await new Promise((resolve) => setTimeout(resolve, 700)); // room for a duplicate to show up
      await stop();
      expect(seen).toEqual(["pending", "failed", "completed"]);
    });

    it("tells a subscriber of a not-yet-written row its first status", async () => {
      const { store } = await fresh();
      const { seen, stop } = recordStatuses(store, "later");
      await new Promise((resolve) => setTimeout(resolve, 100));
      await store.saveSnapshot("later", () => snapshotRow("s1", { status: "pending" }));
      await eventually(() => seen.length === 1);
      await stop();
      expect(seen).toEqual(["pending"]);
    });

    it("ends the subscription and releases its resources when the signal aborts", async () => {
      const { store, openResources } = await fresh();
      await store.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
      const controller = new AbortController();
      let ended = false;
      const done = (async () => {
        for await (const _status of store.subscribeStatus("bg", controller.signal)) void _status;
        ended = true;
      })();
      await eventually(() => openResources() > 0);
      controller.abort();
      await done;
      expect(ended).toBe(true);
      await eventually(() => openResources() === 0);
    });

    it("pages a session's rows newest first with page tokens", async () => {
      const { store } = await fresh();
      for (let i = 0; i < 7; i++) await store.saveSnapshot(`snap-${i}`, () => snapshotRow("s1", { createdAt: 1000 + i }));
      await store.saveSnapshot("other", () => snapshotRow("s2", { createdAt: 5000 }));
      const ids: string[] = [];
      const sizes: number[] = [];
      let pageToken: string | undefined;
      do {
        const page = await store.listSnapshots("s1", { pageSize: 3, ...(pageToken ? { pageToken } : {}) });
        ids.push(...page.snapshots.map((s) => s.snapshotId));
        sizes.push(page.snapshots.length);
        pageToken = page.nextPageToken;
      } while (pageToken);
      expect(sizes).toEqual([3, 3, 1]);
      expect(ids).toEqual(["snap-6", "snap-5", "snap-4", "snap-3", "snap-2", "snap-1", "snap-0"]);
    });

    it("rejects a page token it did not issue with INVALID_ARGUMENT", async () => {
      const { store } = await fresh();
      await expect(store.listSnapshots("s1", { pageToken: "not-a-token" })).rejects.toMatchObject({ status: "INVALID_ARGUMENT" });
    });

    it("reports unknown IDs and sessions as not found", async () => {
      const { store } = await fresh();
      expect(await store.getSnapshot("missing")).toBeUndefined();
      expect(await store.getLatestSnapshot("missing")).toBeUndefined();
      expect(await store.listSnapshots("missing")).toEqual({ snapshots: [] });
    });

    it("round-trips 5 MB of messages", async () => {
      const { store } = await fresh();
      const chunk = "x".repeat(50_000);
      const messages = Array.from({ length: 100 }, (_, i) => userText(`${i}:${chunk}`));
      const row = snapshotRow("s1", { state: { messages, artifacts: [], custom: { n: 1 } } });
      await store.saveSnapshot("big", () => row);
      const read = (await store.getSnapshot("big"))!;
      expect(read.state!.messages).toHaveLength(100);
      expect(read).toEqual({ ...row, snapshotId: "big" });
    });
  });
}
