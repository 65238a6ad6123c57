import { describe, expect, it } from "vitest";
import type { StoreUnderTest } from "./conformance.js";
import { commitRecord, eventually, pendingRecord, sleep, T0 } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

/** subscribeStatus: the current status, then every change in order without duplicates, until the signal aborts. */
export function describeStatus(fresh: () => Promise<StoreUnderTest>): void {
  describe("subscribeStatus", () => {
    it("tells a subscriber the current status, then every change in order without duplicates", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
      const { seen, stop } = recordStatuses(store, "bg");
      try {
        await eventually(() => seen.length === 1);
        for (let i = 0; i < 3; i++) await store.updateRecord("bg", (e) => ({ ...e, heartbeatAt: T0 + i }));
        await store.updateRecord("bg", (e) => ({ ...e, status: "failed" }));
        await eventually(() => seen.includes("failed"));
        await store.updateRecord("bg", (e) => ({ ...e, status: "completed" }));
        await eventually(() => seen.includes("completed"));
        await sleep(700); // room for a duplicate to show up
      } finally {
        await stop();
      }
      expect(seen).toEqual(["pending", "failed", "completed"]);
    });

    it("tells a subscriber of a not-yet-committed record its first status when the record is committed", async () => {
      const { store } = await fresh();
      const { seen, stop } = recordStatuses(store, "later");
      try {
        await sleep(100);
        expect(seen).toEqual([]);
        await commitRecord(store, undefined, pendingRecord("s1", "later"));
        await eventually(() => seen.length === 1);
        await store.updateRecord("later", (e) => ({ ...e, status: "completed" }));
        await eventually(() => seen.length === 2);
      } finally {
        await stop();
      }
      expect(seen).toEqual(["pending", "completed"]);
    });

    it("ends the subscription and releases its resources when the signal aborts", async () => {
      const { store, openResources } = await fresh();
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
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
  });
}
