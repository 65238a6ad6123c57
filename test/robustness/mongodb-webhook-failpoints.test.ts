import { afterAll, beforeAll, describe, expect, vi } from "vitest";
import { WebhookDispatcher } from "../../src/runtime/webhooks/webhook-dispatcher.js";
import { WebhookEndpoints } from "../../src/runtime/webhooks/webhook-endpoints.js";
import { WEBHOOK_DEFAULTS, type WebhookSettings } from "../../src/runtime/webhooks/webhook-settings.js";
import { WebhookRelay, webhookStore } from "../../src/runtime/webhooks/webhook-store.js";
import { userText } from "../../src/types/content.js";
import type { DetachedWork } from "../../src/types/detached-work.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { WebhookEvent } from "../../stores/webhook-outbox.js";
import { commandKey } from "../harness/mongo-crash-points.js";
import { failpointCases, failpointStores, type FailpointFlow } from "../harness/failpoint-flows.js";
import type { TappedCommand } from "../harness/mongo-wire-tap.js";
import { startWebhookReceiver, type WebhookReceiver } from "../harness/webhook-receiver.js";
import {
  checkpointRecord,
  commitRecord,
  pendingRecord,
  T0,
  type CounterRecord,
  type CounterState,
} from "../stores/snapshot-factory.js";

// The failpoint harness of mongodb-job-failpoints.test.ts for a webhook delivery: a job's end
// queues its outbox event (the end write carries the row's mark, the relay then puts the event),
// a dispatcher claims it, POSTs it to a local receiver and marks it delivered, or schedules a
// retry. Every MongoDB command of the step is cut before it reaches the server (a network
// failure: not applied), cut after the server applied it (its reply lost), or refused with a
// transient error (a failover's PrimarySteppedDown: not applied); the store is
// abandoned, and a new store repeats the step (the restarted worker relays the row's mark as the
// takeover pass does; the restarted dispatcher runs once the crashed one's lease has lapsed: the
// clock is `Date.now` pinned per step, so nothing waits). Then: the event is queued exactly once,
// never marked delivered without a 2xx delivery, every counted attempt was a real POST, and a
// claim lost with its reply is claimed again after its lease.
const DATABASE = "agentd_webhook_failpoints";
type Store = MongoSessionStore<CounterState>;
/** The dispatchers' clock: well after every event was queued (so each one is due). */
const NOW = Date.now() + 24 * 3_600_000;
/** Retries far away (so a scheduled retry is never due at the repeat) and never given up on. */
const SETTINGS = (url: string): WebhookSettings => ({
  ...WEBHOOK_DEFAULTS,
  url: new URL(url),
  keys: [Buffer.from("whsec-failpoint-harness-key-0001")],
  allowPrivate: true,
  baseBackoffMs: 1e12,
  maxBackoffMs: 1e12,
  retryPeriodMs: 1e13,
});

const work: DetachedWork = {
  inputs: [{ message: userText("go on") } as DetachedWork["inputs"][number]],
  firstTurnIndex: 1,
  completed: 0,
  lastSequence: 0,
  runs: [{ invocationId: "inv-0", instance: "i0", startedAt: T0, fromInput: 0 }],
  principal: { subject: "anonymous", tenant: "", claims: {} },
};

/** True for the settlement's clearing of a committed record's `pending` mark (sent without the caller waiting). */
const isRecordSettle = (command: TappedCommand): boolean =>
  command.name === "update" &&
  command.statements.length > 0 &&
  command.statements.every((s) => JSON.stringify(s.u) === JSON.stringify({ $unset: { pending: "" } }));
/**
 * `<command> <collection>` without the test's collection prefix (each case has its own); `… settle`
 * for the settlement's writes, which belong to the commit before the step and may land within it.
 */
const keyOf = (command: TappedCommand): string =>
  commandKey(command).replace(/ t[0-9a-f]{10}_/, " ") + (isRecordSettle(command) ? " settle" : "");

type Flow = FailpointFlow<Store>;

describe.skipIf(Boolean(process.env.MONGODB_URI))("failing every MongoDB command of a webhook delivery", () => {
  const stores = failpointStores(DATABASE);
  let receiver: WebhookReceiver;
  let endpoints: WebhookEndpoints;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    const settings = SETTINGS(receiver.url);
    endpoints = new WebhookEndpoints({ url: settings.url, display: receiver.url, keys: settings.keys });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const withJob = async (store: Store): Promise<void> => {
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    const row: CounterRecord = pendingRecord("s1", "job", { parentId: "root", turnIndex: 1, work });
    await store.commit({ expectedVersion: head.version, head: { ...head }, record: row });
  };
  /** The relay of the process that opened `store` (into that store's outbox). */
  const relayOf = (store: Store): WebhookRelay => new WebhookRelay(store.webhookOutbox(), endpoints);
  /** The write that ends the job, through the webhook-marking store (its relay puts the event). */
  const end = (store: Store): Promise<CounterRecord | null> =>
    webhookStore(store, relayOf(store)).updateRecord("job", (r) =>
      r.status === "pending" ? { ...r, status: "completed", finishReason: "stop" } : null,
    );
  const ended = async (store: Store): Promise<void> => {
    await withJob(store);
    await end(store);
  };
  const events = async (store: Store): Promise<WebhookEvent[]> =>
    (await store.webhookOutbox().list({ tenant: "" })).events.filter((e) => e.snapshotId === "job");

  /** One dispatcher pass (and its attempts) at `now`, as instance `instance`; rejects with the first failure. */
  const dispatch = async (store: Store, instance: string, now: number): Promise<void> => {
    const failures: unknown[] = [];
    const dispatcher = new WebhookDispatcher(store.webhookOutbox(), SETTINGS(receiver.url), endpoints, instance, {
      passFailed: (err) => failures.push(err),
    });
    const clock = vi.spyOn(Date, "now").mockReturnValue(now);
    try {
      await dispatcher.pass();
    } finally {
      await dispatcher.stop();
      clock.mockRestore();
    }
    if (failures.length) throw failures[0];
  };
  /** A delivery step answered by `answers`: the restarted dispatcher runs after the crashed one's lease lapsed. */
  const deliver =
    (answers: number[]) =>
    async (store: Store, repeat: boolean): Promise<void> => {
      if (!repeat) receiver.received.length = 0;
      receiver.answers = [...answers];
      const leaseMs = SETTINGS(receiver.url).timeoutMs + 5_000; // WebhookDispatcher.leaseMs
      await dispatch(store, repeat ? "restarted" : "crashed", repeat ? NOW + leaseMs + 1 : NOW);
    };
  /** Every counted attempt was a POST of the event; one marked delivered got a 2xx. */
  const attemptsWereSent = (event: WebhookEvent): void => {
    const posts = receiver.received.filter((r) => r.headers["webhook-id"] === event.id);
    expect(posts.length).toBeGreaterThanOrEqual(event.attempts);
    if (event.state === "delivered") expect(posts.some((p) => p.answered < 300)).toBe(true);
  };

  const FLOWS: Flow[] = [
    {
      name: "a job's end queues its webhook (the marked end write, then the relay's put)",
      setup: withJob,
      step: async (store, repeat) => {
        const row = await end(store);
        // The restarted worker (or the takeover pass) relays the mark of a row that already ended.
        if (repeat) await relayOf(store).relay(store, row ?? (await store.getRecord("job"))!, undefined);
      },
      check: async (store) => {
        expect(await store.getRecord("job")).toMatchObject({
          status: "completed",
          webhook: { id: "msg_job", type: "invocation.completed" },
        });
        const queued = await events(store);
        expect(queued.map((e) => [e.id, e.state, e.attempts])).toEqual([["msg_job", "pending", 0]]);
      },
    },
    {
      name: "delivery (claim, POST answered 204, mark delivered)",
      setup: ended,
      step: deliver([]),
      check: async (store) => {
        const [event, ...more] = await events(store);
        expect(more).toEqual([]);
        expect(event).toMatchObject({ state: "delivered" });
        expect(event!.lease).toBeUndefined();
        attemptsWereSent(event!);
      },
    },
    {
      name: "retry (claim, POST answered 503, schedule the next attempt)",
      setup: ended,
      step: deliver([503, 503, 503]),
      check: async (store) => {
        const [event, ...more] = await events(store);
        expect(more).toEqual([]);
        expect(event).toMatchObject({ state: "pending", attempts: 1, lastError: expect.stringContaining("503") });
        expect(event!.lease).toBeUndefined();
        expect(event!.nextAttemptAt).toBeGreaterThan(NOW);
        attemptsWereSent(event!);
      },
    },
  ];

  failpointCases(FLOWS, { ...stores, keyOf });
});
