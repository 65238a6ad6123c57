import { describe, expect, it } from "vitest";
import type { SessionHead, SessionLease, SessionStore, StoreCallContext } from "../../stores/snapshot-store.js";
import type { ConformanceOptions, StoreUnderTest } from "./conformance.js";
import { checkpointRecord, commitOf, T0, type CounterState } from "./snapshot-factory.js";

type Store = SessionStore<CounterState> &
  Required<Pick<SessionStore<CounterState>, "listLeasedHeads" | "deleteSession" | "sweepExpired">>;

/** The store under test with `listLeasedHeads`; every store must implement it (the test fails otherwise). */
async function leasedStore(fresh: () => Promise<StoreUnderTest>): Promise<StoreUnderTest & { store: Store }> {
  const t = await fresh();
  const s = t.store;
  if (
    typeof s.listLeasedHeads !== "function" ||
    typeof s.deleteSession !== "function" ||
    typeof s.sweepExpired !== "function"
  )
    throw new Error("the store does not implement listLeasedHeads/deleteSession/sweepExpired");
  return t as StoreUnderTest & { store: Store };
}

/** How {@link seed} creates a session. */
export interface SeedOptions {
  /** The lease's expiresAt (epoch ms); unset: the head carries no lease. */
  leaseExpiresAt?: number;
  owner?: string;
  ctx?: StoreCallContext;
  ttlMs?: number;
}

/** Creates a session (one checkpoint record, updatedAt T0) whose head carries the lease asked for. */
export async function seed(
  store: SessionStore<CounterState>,
  sessionId: string,
  options: SeedOptions = {},
): Promise<SessionHead> {
  const commit = commitOf(undefined, checkpointRecord(sessionId, `${sessionId}-r0`));
  const lease: SessionLease | undefined =
    options.leaseExpiresAt === undefined
      ? undefined
      : { invocationId: `inv-${sessionId}`, expiresAt: options.leaseExpiresAt };
  commit.head = {
    ...commit.head,
    owner: options.owner ?? "",
    ...(lease ? { lease } : {}),
    ...(options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {}),
  };
  const stored = await store.commit(commit, options.ctx);
  if (!stored) throw new Error(`seeding ${sessionId} conflicted`);
  return stored;
}

const sessionIds = (heads: readonly SessionHead[]): string[] => heads.map((h) => h.sessionId);

/**
 * listLeasedHeads (what instances poll to take over the detached work of a
 * dead one): only heads carrying a lease, lapsed or valid, of every owner,
 * the earliest `lease.expiresAt` first (ties: sessionId ascending), at most
 * `limit`, INVALID_ARGUMENT for a limit that is not an integer >= 1, and
 * only heads `getHead` returns (not a deleted session; an expired one until
 * it is swept). With `separatesTenants`, a call with a context covers that
 * tenant's namespace only.
 */
export function describeLeasedHeads(
  fresh: () => Promise<StoreUnderTest>,
  options: Pick<ConformanceOptions, "separatesTenants"> = {},
): void {
  describe("leased heads (listLeasedHeads)", () => {
    it("lists only the heads that carry a lease, as getHead returns them; a released lease is not listed", async () => {
      const { store } = await leasedStore(fresh);
      const now = Date.now();
      await seed(store, "plain");
      await seed(store, "leased", { leaseExpiresAt: now + 60_000 });
      const held = await seed(store, "released", { leaseExpiresAt: now + 30_000 });
      expect(sessionIds(await store.listLeasedHeads(10))).toEqual(["released", "leased"]);
      // A head-only commit without the lease releases it.
      const { lease: _lease, version: _version, ...rest } = held;
      expect(await store.commit({ expectedVersion: held.version, head: { ...rest, updatedAt: T0 + 1 } })).toMatchObject(
        {
          version: 2,
        },
      );
      expect((await store.getHead("released"))?.lease).toBeUndefined();
      const listed = await store.listLeasedHeads(10);
      expect(listed).toEqual([await store.getHead("leased")]);
      expect(listed[0]).toMatchObject({ lease: { invocationId: "inv-leased", expiresAt: now + 60_000 } });
    });

    it("lists lapsed and valid leases, the earliest lease.expiresAt first, ties by the smaller sessionId", async () => {
      const { store } = await leasedStore(fresh);
      const now = Date.now();
      // Written in an order that is neither the expected one nor sessionId order.
      await seed(store, "b", { leaseExpiresAt: now + 60_000 });
      await seed(store, "z", { leaseExpiresAt: now - 120_000 });
      await seed(store, "a", { leaseExpiresAt: now + 60_000 });
      await seed(store, "y", { leaseExpiresAt: now + 120_000 });
      await seed(store, "m", { leaseExpiresAt: now - 60_000 });
      await seed(store, "none");
      const listed = await store.listLeasedHeads(100);
      expect(sessionIds(listed)).toEqual(["z", "m", "a", "b", "y"]);
      expect(listed.map((h) => h.lease?.expiresAt)).toEqual([
        now - 120_000,
        now - 60_000,
        now + 60_000,
        now + 60_000,
        now + 120_000,
      ]);
      for (const head of listed) expect(head).toEqual(await store.getHead(head.sessionId));
    });

    it("returns at most limit heads: the earliest ones", async () => {
      const { store } = await leasedStore(fresh);
      const now = Date.now();
      for (const [id, offset] of [
        ["s3", 3],
        ["s1", 1],
        ["s5", 5],
        ["s2", 2],
        ["s4", 4],
      ] as const)
        await seed(store, id, { leaseExpiresAt: now + offset * 1000 });
      expect(sessionIds(await store.listLeasedHeads(1))).toEqual(["s1"]);
      expect(sessionIds(await store.listLeasedHeads(2))).toEqual(["s1", "s2"]);
      expect(sessionIds(await store.listLeasedHeads(4))).toEqual(["s1", "s2", "s3", "s4"]);
      expect(sessionIds(await store.listLeasedHeads(5))).toEqual(["s1", "s2", "s3", "s4", "s5"]);
      expect(sessionIds(await store.listLeasedHeads(1000))).toEqual(["s1", "s2", "s3", "s4", "s5"]);
      expect(sessionIds(await store.listLeasedHeads(Number.MAX_SAFE_INTEGER))).toEqual(["s1", "s2", "s3", "s4", "s5"]);
      expect(await (await leasedStore(fresh)).store.listLeasedHeads(10)).toEqual([]);
    });

    it("lists the heads of every owner, whichever tenant context wrote them, when called without a context", async () => {
      const { store } = await leasedStore(fresh);
      const now = Date.now();
      const acme = { tenant: "acme" };
      const globex = { tenant: "globex" };
      await seed(store, "acme-1", { owner: "acme", ctx: acme, leaseExpiresAt: now + 3000 });
      await seed(store, "globex-1", { owner: "globex", ctx: globex, leaseExpiresAt: now + 1000 });
      await seed(store, "anon-1", { leaseExpiresAt: now + 2000 });
      await seed(store, "acme-2", { owner: "acme", ctx: acme });
      const listed = await store.listLeasedHeads(10);
      expect(sessionIds(listed)).toEqual(["globex-1", "anon-1", "acme-1"]);
      expect(listed).toEqual([
        await store.getHead("globex-1", globex),
        await store.getHead("anon-1"),
        await store.getHead("acme-1", acme),
      ]);
      expect(listed.map((h) => h.owner)).toEqual(["globex", "", "acme"]);
    });

    // Registered only for stores with a namespace per tenant (the file store's path prefixes).
    if (options.separatesTenants)
      it("covers only the context's tenant namespace when called with a context", async () => {
        const { store } = await leasedStore(fresh);
        const now = Date.now();
        const acme = { tenant: "acme" };
        await seed(store, "acme-1", { owner: "acme", ctx: acme, leaseExpiresAt: now + 3000 });
        await seed(store, "globex-1", { owner: "globex", ctx: { tenant: "globex" }, leaseExpiresAt: now + 1000 });
        await seed(store, "anon-1", { leaseExpiresAt: now + 2000 });
        expect(sessionIds(await store.listLeasedHeads(10, acme))).toEqual(["acme-1"]);
        expect(sessionIds(await store.listLeasedHeads(10, { tenant: "nobody" }))).toEqual([]);
        expect(sessionIds(await store.listLeasedHeads(10))).toEqual(["globex-1", "anon-1", "acme-1"]);
      });

    it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
      "rejects limit %s with INVALID_ARGUMENT",
      async (limit) => {
        const { store } = await leasedStore(fresh);
        await seed(store, "leased", { leaseExpiresAt: Date.now() + 60_000 });
        await expect(store.listLeasedHeads(limit)).rejects.toMatchObject({
          status: "INVALID_ARGUMENT",
          message: `listLeasedHeads: limit must be an integer >= 1 (got ${String(limit)})`,
        });
      },
    );

    it("does not list a deleted session", async () => {
      const { store } = await leasedStore(fresh);
      const now = Date.now();
      await seed(store, "gone", { leaseExpiresAt: now + 1000 });
      await seed(store, "kept", { leaseExpiresAt: now + 2000 });
      expect(sessionIds(await store.listLeasedHeads(10))).toEqual(["gone", "kept"]);
      expect(await store.deleteSession("gone")).toBe(true);
      expect(sessionIds(await store.listLeasedHeads(10))).toEqual(["kept"]);
    });

    it("lists an expired session as long as getHead returns it (until a sweep deletes it)", async () => {
      const { store } = await leasedStore(fresh);
      // Expired since T0 + 1000 (years ago), its lease lapsed too.
      await seed(store, "expired", { leaseExpiresAt: T0 + 500, ttlMs: 1000 });
      await seed(store, "live", { leaseExpiresAt: Date.now() + 60_000 });
      const expired = await store.getHead("expired");
      expect(expired).toMatchObject({ expiresAt: T0 + 1000 });
      expect(await store.listLeasedHeads(10)).toEqual([expired, await store.getHead("live")]);
      expect(await store.sweepExpired(Date.now())).toBe(1);
      expect(sessionIds(await store.listLeasedHeads(10))).toEqual(["live"]);
    });
  });
}
