import { describe, expect, it } from "vitest";
import type { SessionHead } from "../../stores/snapshot-store.js";
import type { StoreUnderTest } from "./conformance.js";
import { checkpointRecord, commitRecord, ids } from "./snapshot-factory.js";

/** listRecords: a session's records newest first (ties by snapshotId), paged with tokens only the store issues. */
export function describeListing(fresh: () => Promise<StoreUnderTest>): void {
  describe("listRecords", () => {
    it("pages a session's records newest first with page tokens", async () => {
      const { store } = await fresh();
      let head: SessionHead | undefined;
      for (let i = 0; i < 7; i++)
        head = await commitRecord(
          store,
          head,
          checkpointRecord("s1", `snap-${i}`, { turnIndex: i, createdAt: 1000 + i }),
        );
      await commitRecord(store, undefined, checkpointRecord("s2", "other", { createdAt: 5000 }));
      const pages: string[][] = [];
      let pageToken: string | undefined;
      do {
        const page = await store.listRecords("s1", { pageSize: 3, ...(pageToken ? { pageToken } : {}) });
        pages.push(ids(page.records));
        pageToken = page.nextPageToken;
      } while (pageToken && pages.length < 10); // bounded: a broken token must fail the test, not hang it
      expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
      expect(pages.flat()).toEqual(["snap-6", "snap-5", "snap-4", "snap-3", "snap-2", "snap-1", "snap-0"]);
    });

    it("orders records with the same createdAt by the greater snapshotId, across page boundaries", async () => {
      const { store } = await fresh();
      let head: SessionHead | undefined;
      const order = ["tie-b", "tie-e", "early", "tie-a", "tie-d", "late", "tie-c"];
      for (const [i, id] of order.entries()) {
        const createdAt = id === "early" ? 1000 : id === "late" ? 3000 : 2000;
        head = await commitRecord(store, head, checkpointRecord("s1", id, { turnIndex: i, createdAt }));
      }
      const pages: string[][] = [];
      let pageToken: string | undefined;
      do {
        const page = await store.listRecords("s1", { pageSize: 2, ...(pageToken ? { pageToken } : {}) });
        pages.push(ids(page.records));
        pageToken = page.nextPageToken;
      } while (pageToken && pages.length < 10); // bounded: a broken token must fail the test, not hang it
      expect(pages).toEqual([["late", "tie-e"], ["tie-d", "tie-c"], ["tie-b", "tie-a"], ["early"]]);
    });

    it("rejects a page token it did not issue with INVALID_ARGUMENT", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, checkpointRecord("s1", "a"));
      await expect(store.listRecords("s1", { pageToken: "not-a-token" })).rejects.toMatchObject({
        status: "INVALID_ARGUMENT",
      });
    });

    it("rejects a negative page size with INVALID_ARGUMENT; none or 0 means the default page size", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, checkpointRecord("s1", "a"));
      for (const pageSize of [-1, -50, Number.NaN]) {
        await expect(store.listRecords("s1", { pageSize }), `pageSize ${pageSize}`).rejects.toMatchObject({
          status: "INVALID_ARGUMENT",
          message: expect.stringContaining("page size must not be negative"),
        });
      }
      expect(ids((await store.listRecords("s1", { pageSize: 0 })).records)).toEqual(["a"]);
      expect(ids((await store.listRecords("s1", {})).records)).toEqual(["a"]);
    });

    it("lists no records for an unknown session", async () => {
      const { store } = await fresh();
      await commitRecord(store, undefined, checkpointRecord("s1", "a"));
      const page = await store.listRecords("missing");
      expect(page.records).toEqual([]);
      expect(page.nextPageToken).toBeUndefined();
    });
  });
}
