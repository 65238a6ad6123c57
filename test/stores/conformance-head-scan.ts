import { describe, expect, it } from "vitest";
import type { SessionHead, SessionStore } from "../../stores/snapshot-store.js";
import type { StoreUnderTest } from "./conformance.js";
import { seed } from "./conformance-leased-heads.js";
import type { CounterState } from "./snapshot-factory.js";

type Store = SessionStore<CounterState> & Required<Pick<SessionStore<CounterState>, "scanHeads">>;

/**
 * scanHeads (what `agentd copy-store` enumerates a source with): every head
 * of every owner exactly once, sessionId ascending, in pages that continue
 * strictly after the cursor, fewer than `limit` on the last page, and
 * INVALID_ARGUMENT for a limit that is not an integer >= 1. Every store must
 * implement it (the test fails otherwise).
 */
export function describeHeadScan(fresh: () => Promise<StoreUnderTest>): void {
  describe("head scan (scanHeads)", () => {
    it("returns every head of every owner once, sessionId ascending, page after page", async () => {
      const { store } = await fresh();
      if (typeof store.scanHeads !== "function") throw new Error("the store does not implement scanHeads");
      const scanning = store as Store;
      // Written out of order, across owners; "B" sorts before "a" in code-unit order.
      const ids = ["s-07", "a", "s-02", "B", "s-10", "s-01", "z", "s-05"];
      for (const [i, id] of ids.entries()) await seed(scanning, id, { owner: i % 2 ? "acme" : "" });
      const seen: SessionHead[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < ids.length; pages++) {
        const page = await scanning.scanHeads(after, 3);
        seen.push(...page);
        if (page.length < 3) break;
        after = page.at(-1)!.sessionId;
      }
      expect(seen.map((h) => h.sessionId)).toEqual([...ids].sort());
      expect(new Set(seen.map((h) => h.owner))).toEqual(new Set(["", "acme"]));
      expect(seen[0]).toEqual(await store.getHead(seen[0]!.sessionId));
      expect(await scanning.scanHeads("z", 3)).toEqual([]);
      await expect(scanning.scanHeads(undefined, 0)).rejects.toMatchObject({ status: "INVALID_ARGUMENT" });
      await expect(scanning.scanHeads(42 as unknown as string, 3)).rejects.toMatchObject({
        status: "INVALID_ARGUMENT",
        message: expect.stringContaining("afterSessionId must be a session ID string"),
      });
    });
  });
}
