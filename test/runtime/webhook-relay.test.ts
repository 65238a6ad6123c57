import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import type { SqlSessionStore } from "../../stores/sql/sql-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { hasWebhookOutbox } from "../../stores/webhook-outbox.js";
import { takeOverDeadWork } from "../../src/runtime/background/work-takeover.js";
import { startWebhooks } from "../../src/runtime/webhooks/webhooks.js";
import type { DetachedWork } from "../../src/types/detached-work.js";
import { checkpointRecord, commitOf, pendingRecord } from "../stores/snapshot-factory.js";
import { LIVENESS as TAKEOVER_LIVENESS } from "./takeover-fixtures.js";

const LIVENESS = { ...TAKEOVER_LIVENESS, chunkRetentionMs: 60_000 };

const WORK: DetachedWork = {
  inputs: [{}],
  firstTurnIndex: 0,
  completed: 0,
  lastSequence: 0,
  runs: [{ invocationId: "dead", instance: "A", startedAt: 1, fromInput: 0 }],
  principal: { subject: "ann", tenant: "acme", claims: {} },
};

/** An SQLite store whose session `s1` has a detached row `r1` (heartbeat at `heartbeatAt`) and a lapsed lease of its dead worker. */
async function deadWorker(heartbeatAt: number): Promise<SqlSessionStore> {
  const store = await sqliteStore();
  const commit = commitOf(undefined, pendingRecord("s1", "r1", { work: WORK, heartbeatAt, updatedAt: heartbeatAt }));
  commit.head = { ...commit.head, owner: "acme", lease: { invocationId: "dead", expiresAt: Date.now() - 1 } };
  await store.commit(commit, { tenant: "acme" });
  return store;
}

/** A fresh SQLite store in a temporary directory. */
async function sqliteStore(): Promise<SqlSessionStore> {
  return openSqlStore(`sqlite:${join(await mkdtemp(join(tmpdir(), "agentd-relay-")), "agentd.db")}`);
}

/** Webhooks on `store` (nothing is delivered: the dispatcher is not started). */
function webhooksOn(store: SessionStore) {
  return startWebhooks(store, store, { url: new URL("http://127.0.0.1:1/hook"), keys: [Buffer.alloc(32)] }, "B");
}

describe("the webhook relay of work whose worker died", () => {
  it("a row that ended with its mark written but never relayed (killed in between) is relayed by the takeover pass before its lapsed lease is dropped", async () => {
    const store = await deadWorker(Date.now());
    // The ending write with its mark, as the worker's store wrote it, then the process died: no relay, no release.
    await store.updateRecord(
      "r1",
      (row) => ({
        ...row,
        status: "completed",
        finishReason: "stop",
        webhook: { id: "msg_r1", type: "invocation.completed", at: 5 },
      }),
      { tenant: "acme" },
    );
    const webhooks = webhooksOn(store);
    await takeOverDeadWork({
      stores: () => [store],
      agent: () => undefined,
      liveness: LIVENESS,
      settled: webhooks.settled,
    });
    const event = await webhooks.outbox.get("msg_r1");
    expect([event?.type, event?.tenant, event?.state, JSON.parse(event!.body).data.status]).toEqual([
      "invocation.completed",
      "acme",
      "pending",
      "completed",
    ]);
    expect((await store.getHead("s1", { tenant: "acme" }))!.lease).toBeUndefined();
    await store.close();
  });

  it("a detached row nobody took over (it reads as expired) gets an invocation.expired event", async () => {
    const store = await deadWorker(Date.now() - 10 * LIVENESS.heartbeatTtlMs);
    const webhooks = webhooksOn(store);
    await takeOverDeadWork({
      stores: () => [store],
      agent: () => undefined,
      liveness: LIVENESS,
      settled: webhooks.settled,
    });
    const event = await webhooks.outbox.get("msg_r1");
    expect([event?.type, JSON.parse(event!.body).data.status]).toEqual(["invocation.expired", "expired"]);
    expect((await store.getRecord("r1", { tenant: "acme" }))?.webhook?.type).toBe("invocation.expired");
    await store.close();
  });

  it("the wrapped store writes the mark in the write that ends the work and relays it before resolving", async () => {
    const store = await deadWorker(Date.now());
    const webhooks = webhooksOn(store);
    const ended = await webhooks.store.updateRecord(
      "r1",
      (row) => ({ ...row, status: "failed", finishReason: "failed" }),
      {
        tenant: "acme",
      },
    );
    expect(ended?.webhook).toMatchObject({ id: "msg_r1", type: "invocation.failed" });
    expect((await webhooks.outbox.get("msg_r1"))?.type).toBe("invocation.failed");
    expect(hasWebhookOutbox(webhooks.store)).toBe(true);
    await store.close();
  });

  it("the wrapped store's sweep queues session.expired before deleting; a sweep dying in between leaves the session, and the next one queues the same event once", async () => {
    const store = await sqliteStore();
    const first = commitOf(undefined, checkpointRecord("s1", "r0", { createdAt: 1000 }));
    await store.commit({ ...first, head: { ...first.head, ttlMs: 50, labels: { team: "blue" } } });
    const webhooks = webhooksOn(store);
    const dying = webhooks.store.sweepExpired!(1050, undefined, () => Promise.reject(new Error("killed")));
    await expect(dying).rejects.toThrow("killed");
    expect(await store.getHead("s1")).toBeDefined();
    const queued = await webhooks.outbox.get("msg_s1_expired");
    expect(queued).toMatchObject({ type: "session.expired", sessionId: "s1", snapshotId: "r0" });
    expect(JSON.parse(queued!.body)).toMatchObject({ data: { status: "expired", labels: { team: "blue" } } });
    expect(await webhooks.store.sweepExpired!(1050)).toBe(1);
    expect(await store.getHead("s1")).toBeUndefined();
    expect(await webhooks.outbox.get("msg_s1_expired")).toEqual(queued);
    await store.close();
  });

  it("a store without an outbox is refused with FAILED_PRECONDITION", () => {
    const bare = { getHead: () => Promise.resolve(undefined) } as unknown as SessionStore;
    expect(() => webhooksOn(bare)).toThrow(expect.objectContaining({ status: "FAILED_PRECONDITION" }));
  });
});
