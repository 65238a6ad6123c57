import { describe, expect, it } from "vitest";
import { hasWebhookOutbox, type WebhookEvent, type WebhookOutbox } from "../../stores/webhook-outbox.js";
import { openSharedStore } from "./shared-store.js";
import type { ConformanceOptions, StoreUnderTest } from "./conformance.js";

/** The store's outbox; every store must keep one (the test fails otherwise). */
async function outboxOf(fresh: () => Promise<StoreUnderTest>): Promise<{ outbox: WebhookOutbox; t: StoreUnderTest }> {
  const t = await fresh();
  if (!hasWebhookOutbox(t.store)) throw new Error("the store does not keep a webhook outbox");
  return { outbox: t.store.webhookOutbox(), t };
}

/** A pending event due at `createdAt`. */
function event(id: string, createdAt: number, tenant = ""): WebhookEvent {
  return {
    id,
    type: "invocation.completed",
    tenant,
    agent: "echo",
    sessionId: `s-${id}`,
    snapshotId: `r-${id}`,
    createdAt,
    body: JSON.stringify({ type: "invocation.completed", id }),
    url: "http://127.0.0.1:1/hook",
    state: "pending",
    attempts: 0,
    nextAttemptAt: createdAt,
  };
}

/** The webhook outbox every store keeps (see `WebhookOutbox`). */
export function describeWebhookOutbox(
  fresh: () => Promise<StoreUnderTest>,
  options: Pick<ConformanceOptions, "sharedAcrossProcesses"> = {},
): void {
  describe("webhook outbox", () => {
    it("put is idempotent by ID: the first event of an ID stays", async () => {
      const { outbox } = await outboxOf(fresh);
      expect(await outbox.put(event("msg_a", 1000))).toBe(true);
      expect(await outbox.put({ ...event("msg_a", 2000), body: "other" })).toBe(false);
      expect((await outbox.get("msg_a"))?.body).toBe(event("msg_a", 1000).body);
    });

    it("claim leases a due event to one caller until the lease lapses", async () => {
      const { outbox } = await outboxOf(fresh);
      await outbox.put(event("msg_a", 1000));
      const first = await outbox.claim("i1", 5000, 1000, 10);
      expect(first.map((e) => [e.id, e.lease])).toEqual([["msg_a", { instance: "i1", until: 6000 }]]);
      expect(await outbox.claim("i2", 5999, 1000, 10)).toEqual([]);
      expect((await outbox.claim("i2", 6000, 1000, 10)).map((e) => e.id)).toEqual(["msg_a"]);
    });

    it("claim leaves events that are not yet due", async () => {
      const { outbox } = await outboxOf(fresh);
      await outbox.put({ ...event("msg_a", 1000), nextAttemptAt: 9000 });
      expect(await outbox.claim("i1", 8999, 1000, 10)).toEqual([]);
      expect(await outbox.claim("i1", 9000, 1000, 10)).toHaveLength(1);
    });

    it("claim skips the events of the endpoints in skipUrls: they neither count towards the limit nor get a lease", async () => {
      const { outbox } = await outboxOf(fresh);
      const busy = "http://127.0.0.1:1/hook";
      for (let i = 0; i < 3; i++) await outbox.put(event(`msg_busy${i}`, 1000 + i)); // older, the busy endpoint's
      await outbox.put({ ...event("msg_free", 2000), url: "http://127.0.0.1:2/hook" });
      const claimed = await outbox.claim("i1", 5000, 1000, 1, { skipUrls: [busy] });
      expect(claimed.map((e) => e.id)).toEqual(["msg_free"]);
      expect((await outbox.get("msg_busy0"))?.lease).toBeUndefined();
      expect((await outbox.claim("i1", 5000, 1000, 10)).map((e) => e.id)).toEqual([
        "msg_busy0",
        "msg_busy1",
        "msg_busy2",
      ]);
    });

    it("settle writes only while the caller holds the lease", async () => {
      const { outbox } = await outboxOf(fresh);
      await outbox.put(event("msg_a", 1000));
      await outbox.claim("i1", 5000, 1000, 10);
      await outbox.claim("i2", 6000, 1000, 10);
      const update = { state: "delivered" as const, attempts: 1, nextAttemptAt: 6000, lastAttemptAt: 6000 };
      expect(await outbox.settle("msg_a", "i1", update)).toBe(false);
      expect(await outbox.settle("msg_a", "i2", update)).toBe(true);
      const stored = await outbox.get("msg_a");
      expect([stored?.state, stored?.attempts, stored?.lease]).toEqual(["delivered", 1, undefined]);
      expect(await outbox.claim("i3", 99_000, 1000, 10)).toEqual([]);
    });

    it("list pages a tenant's events newest first, filtered by state", async () => {
      const { outbox } = await outboxOf(fresh);
      for (let i = 0; i < 5; i++) await outbox.put(event(`msg_${i}`, 1000 + i, "acme"));
      await outbox.put(event("msg_other", 1010, "globex"));
      await outbox.claim("i1", 1002, 1000, 1);
      await outbox.settle("msg_0", "i1", { state: "failed", attempts: 3, nextAttemptAt: 1002, lastError: "HTTP 503" });
      const first = await outbox.list({ tenant: "acme", pageSize: 2 });
      expect(first.events.map((e) => e.id)).toEqual(["msg_4", "msg_3"]);
      const rest = await outbox.list({ tenant: "acme", pageSize: 10, pageToken: first.nextPageToken! });
      expect([rest.events.map((e) => e.id), rest.nextPageToken]).toEqual([["msg_2", "msg_1", "msg_0"], undefined]);
      const failed = await outbox.list({ tenant: "acme", state: "failed" });
      expect(failed.events.map((e) => [e.id, e.lastError])).toEqual([["msg_0", "HTTP 503"]]);
    });

    it("a malformed page token is INVALID_ARGUMENT", async () => {
      const { outbox } = await outboxOf(fresh);
      await expect(outbox.list({ tenant: "", pageToken: "nope" })).rejects.toMatchObject({
        status: "INVALID_ARGUMENT",
      });
    });

    it("prune removes settled events older than the cut and keeps pending ones", async () => {
      const { outbox } = await outboxOf(fresh);
      await outbox.put(event("msg_old", 1000));
      await outbox.put(event("msg_pending", 1001));
      await outbox.claim("i1", 1000, 1000, 1);
      await outbox.settle("msg_old", "i1", { state: "delivered", attempts: 1, nextAttemptAt: 1000 });
      expect(await outbox.prune(5000)).toBe(1);
      expect(await outbox.get("msg_old")).toBeUndefined();
      expect(await outbox.oldestPending()).toBe(1001);
    });

    // Registered only for stores several processes share (a skipped test would be reported as skipped).
    if (options.sharedAcrossProcesses)
      it("two store instances sharing the data claim each event once", async () => {
        const { outbox, t } = await outboxOf(fresh);
        if (!t.crossProcess) throw new Error("a store shared across processes must describe how to open it again");
        const other = await openSharedStore(t.crossProcess);
        try {
          if (!hasWebhookOutbox(other)) throw new Error("the second store keeps no outbox");
          for (let i = 0; i < 20; i++) await outbox.put(event(`msg_${String(i).padStart(2, "0")}`, 1000 + i));
          const both = await Promise.all([
            outbox.claim("i1", 5000, 60_000, 20),
            other.webhookOutbox().claim("i2", 5000, 60_000, 20),
          ]);
          const ids = both.flat().map((e) => e.id);
          expect(ids.sort()).toEqual([...new Set(ids)].sort());
          expect(ids).toHaveLength(20);
        } finally {
          await other.close?.();
        }
      });
  });
}
