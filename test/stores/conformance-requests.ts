import { describe, expect, it } from "vitest";
import type { CommittedRequest, SessionHead } from "../../stores/snapshot-store.js";
import type { StoreUnderTest } from "./conformance.js";
import { checkpointRecord, commitOf, commitRecord, T0 } from "./snapshot-factory.js";

/** An entry of a head's committed request IDs. */
function entry(requestId: string, snapshotId: string, committedAt = T0): CommittedRequest {
  return { requestId, snapshotId, committedAt };
}

/** The head without its version, with `fields` replaced. */
function rewritten(head: SessionHead, fields: Partial<SessionHead>): Omit<SessionHead, "version"> {
  const { version: _version, ...rest } = head;
  return { ...rest, ...fields };
}

/**
 * The request-ID ledger (exactly-once turns): a head carries the session's
 * committed request IDs and a record its input's request ID and fingerprint,
 * written by the same compare-and-set as the turn, so a retry finds its turn
 * with the head the runtime holds (no separate index to read or keep in step).
 */
export function describeRequests(fresh: () => Promise<StoreUnderTest>): void {
  describe("committed request IDs", () => {
    it("stores a head's committed request IDs and a record's request ID and fingerprint as given", async () => {
      const { store } = await fresh();
      const record = { ...checkpointRecord("s1", "root"), requestId: "req-1", requestFingerprint: "f".repeat(64) };
      const head = await store.commit({
        ...commitOf(undefined, record),
        head: { ...commitOf(undefined, record).head, requests: [entry("req-1", "root")] },
      });
      expect(head?.requests).toEqual([entry("req-1", "root")]);
      expect((await store.getHead("s1"))?.requests).toEqual([entry("req-1", "root")]);
      expect(await store.getRecord("root")).toMatchObject({ requestId: "req-1", requestFingerprint: "f".repeat(64) });
      expect((await store.listRecords("s1")).records[0]).toMatchObject({ requestId: "req-1" });
    });

    it("keeps the committed request IDs through a head-only write that carries them, and drops them when it leaves them out", async () => {
      const { store } = await fresh();
      const first = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      const withRequests = await store.commit({
        expectedVersion: first.version,
        head: rewritten(first, { requests: [entry("a", "root"), entry("b", "root", T0 + 1)] }),
      });
      const leased = await store.commit({
        expectedVersion: withRequests!.version,
        head: rewritten(withRequests!, { lease: { invocationId: "inv", expiresAt: T0 + 10_000, requestId: "b" } }),
      });
      expect((await store.getHead("s1"))?.requests).toEqual([entry("a", "root"), entry("b", "root", T0 + 1)]);
      expect((await store.getHead("s1"))?.lease?.requestId).toBe("b");
      const { requests: _requests, ...withoutRequests } = rewritten(leased!, {});
      await store.commit({ expectedVersion: leased!.version, head: withoutRequests });
      expect((await store.getHead("s1"))?.requests).toBeUndefined();
    });

    it("of two racing commits of one request ID on the same head version, one lands and the head names its record", async () => {
      const { store } = await fresh();
      const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      const attempt = (snapshotId: string) => {
        const record = {
          ...checkpointRecord("s1", snapshotId, { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }),
          requestId: "same",
          requestFingerprint: "0".repeat(64),
        };
        const commit = commitOf(root, record);
        return store.commit({ ...commit, head: { ...commit.head, requests: [entry("same", snapshotId, T0 + 1)] } });
      };
      const [one, two] = await Promise.all([attempt("one"), attempt("two")]);
      expect([one, two].filter((h) => h !== undefined)).toHaveLength(1);
      const winner = one ? "one" : "two";
      const loser = one ? "two" : "one";
      expect((await store.getHead("s1"))?.requests).toEqual([entry("same", winner, T0 + 1)]);
      expect(await store.getRecord(loser)).toBeUndefined();
      expect(await store.getRecord(winner)).toMatchObject({ requestId: "same" });
    });
  });
}
