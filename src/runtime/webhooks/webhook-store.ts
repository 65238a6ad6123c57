import type {
  ExpireHook,
  RecordMutator,
  RecordWebhookMark,
  SessionHead,
  SessionStore,
  SnapshotRecord,
  StoreCallContext,
} from "../../../stores/snapshot-store.js";
import type { WebhookEvent, WebhookOutbox } from "../../../stores/webhook-outbox.js";
import { effectiveStatus, type LivenessSettings } from "../sessions/snapshot-liveness.js";
import type { WebhookEndpoints } from "./webhook-endpoints.js";
import { markOf, sessionDeletedEventOf, sessionExpiredEventOf, webhookEventOf, webhookIdOf } from "./webhook-event.js";

/** What the relay reports (for logs): an event put into the outbox, or a relay that failed (retried later). */
export interface RelayEvents {
  queued?(eventId: string): void;
  relayFailed?(eventId: string, err: unknown): void;
}

/**
 * Moves webhook events from the rows that owe them into the outbox. A row's
 * mark is written by the same `updateRecord` that ends its work (see
 * {@link webhookStore}); the relay then puts the event into the outbox
 * (idempotent by ID) before the worker releases its session lease. Should the
 * process die between the two, the lease stays on the session's head, and
 * the takeover pass ({@link WebhookRelay.settled}) relays the mark before it
 * drops the lapsed lease: no event is lost.
 */
export class WebhookRelay {
  constructor(
    private readonly outbox: WebhookOutbox,
    private readonly endpoints: WebhookEndpoints,
    private readonly events: RelayEvents = {},
    private readonly wake: () => void = () => {},
  ) {}

  /** Puts the event `record` owes into the outbox (tries 3 times); rejects with the last error. */
  async relay<S>(store: SessionStore<S>, record: SnapshotRecord<S>, ctx: StoreCallContext | undefined): Promise<void> {
    const mark = record.webhook;
    if (!mark) return;
    let last: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const head: SessionHead | undefined = await store.getHead(record.sessionId, ctx);
        const tenant = head?.owner ?? ctx?.tenant ?? "";
        const url = await this.endpoints.resolve(tenant).then(
          (endpoint) => endpoint.display,
          () => "", // the hook fails now: each attempt resolves the endpoint again
        );
        const event = webhookEventOf({ ...record, webhook: mark }, head, tenant, url);
        if (await this.outbox.put(event)) {
          this.events.queued?.(event.id);
          this.wake();
        }
        return;
      } catch (err) {
        last = err;
        await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
      }
    }
    this.events.relayFailed?.(mark.id, last);
    throw last;
  }

  /**
   * Keeps relaying `record`'s event in the background after {@link relay}
   * failed (the ending write is done, so its caller is not failed): every
   * 5 s, doubling up to 5 min, 12 tries (about half an hour). Should the
   * process die meanwhile while the worker's lease is still on the head, the
   * takeover pass relays it; once the lease is released, it is lost with the
   * process (logged by `relayFailed`).
   */
  later<S>(store: SessionStore<S>, record: SnapshotRecord<S>, ctx: StoreCallContext | undefined, attempt = 0): void {
    if (attempt >= 12) return;
    const timer = setTimeout(
      () => void this.relay(store, record, ctx).catch(() => this.later(store, record, ctx, attempt + 1)),
      Math.min(300_000, 5_000 * 2 ** attempt),
    );
    timer.unref();
  }

  /**
   * Queues the `session.deleted` event of `head` just before its deletion
   * (so a process dying in between loses nothing); the dispatcher holds it
   * while the session's head still exists (a deletion that failed), and gives
   * up on it after the retry period. Rejects with the store's error (the
   * deletion then does not happen).
   */
  async sessionDeleted(head: SessionHead): Promise<void> {
    await this.queue(head, sessionDeletedEventOf);
  }

  /**
   * Queues the `session.expired` event of `head` just before the sweep
   * deletes its session (idempotent by the session's ID: concurrent sweeps
   * and a sweep repeated after a crash queue one event); held like
   * `session.deleted` while the head exists. Rejects with the store's error
   * (the sweep then fails and the session stays for the next one).
   */
  async sessionExpired(head: SessionHead): Promise<void> {
    await this.queue(head, sessionExpiredEventOf);
  }

  private async queue(
    head: SessionHead,
    eventOf: (head: SessionHead, url: string, now: number) => WebhookEvent,
  ): Promise<void> {
    const url = await this.endpoints.resolve(head.owner).then(
      (endpoint) => endpoint.display,
      () => "",
    );
    const event = eventOf(head, url, Date.now());
    if (await this.outbox.put(event)) this.events.queued?.(event.id);
  }

  /**
   * The takeover pass's hook for a head whose lapsed lease it is about to
   * drop (its row is no longer pending, or reads as expired): relays the
   * row's mark, after writing an `invocation.expired` mark on a detached row
   * nobody took over. Rejects when the relay failed (the lease then stays
   * and the next pass tries again).
   */
  async settled<S>(
    store: SessionStore<S>,
    head: SessionHead,
    row: SnapshotRecord<S>,
    liveness: LivenessSettings,
  ): Promise<void> {
    const ctx: StoreCallContext = { tenant: head.owner };
    let marked: SnapshotRecord<S> | null = row;
    if (!row.webhook && row.work && effectiveStatus(row, liveness) === "expired") {
      const at = Date.now();
      const mark: RecordWebhookMark = { id: webhookIdOf(row.snapshotId), type: "invocation.expired", at };
      marked = await store.updateRecord(
        row.snapshotId,
        (existing) =>
          existing.status === "pending" && !existing.webhook && existing.work ? { ...existing, webhook: mark } : null,
        ctx,
      );
      marked ??= (await store.getRecord(row.snapshotId, ctx)) ?? null;
    }
    if (marked?.webhook) await this.relay(store, marked, ctx);
  }
}

/**
 * `store` with webhook marks: every `updateRecord` that ends detached work
 * (a pending row with work turning completed, failed or aborted) writes the
 * row's webhook mark in that same write, and once written the event is
 * relayed to the outbox before `updateRecord` resolves (a relay that fails
 * is retried in the background: see {@link WebhookRelay.later}). `deleteSession` queues the session's `session.deleted` event
 * first, `sweepExpired` each expired session's `session.expired` event before
 * deleting it. Every other method is the store's own.
 */
export function webhookStore<S, T extends SessionStore<S>>(store: T, relay: WebhookRelay): T {
  const updateRecord = async (
    snapshotId: string,
    mutator: RecordMutator<S>,
    ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null> => {
    const marking: RecordMutator<S> = (existing) => {
      const next = mutator(existing);
      if (next === null) return null;
      const mark = markOf(existing, next, Date.now());
      return mark ? { ...next, webhook: mark } : next;
    };
    const row = await store.updateRecord(snapshotId, marking, ctx);
    if (row?.webhook && row.status !== "pending")
      await relay.relay(store, row, ctx).catch(() => relay.later(store, row, ctx));
    return row;
  };
  const deleteSession = async (sessionId: string, ctx?: StoreCallContext): Promise<boolean> => {
    const head = await store.getHead(sessionId, ctx);
    if (head) await relay.sessionDeleted(head);
    return store.deleteSession!(sessionId, ctx);
  };
  const sweepExpired = (now: number, ctx?: StoreCallContext, beforeExpire?: ExpireHook): Promise<number> =>
    store.sweepExpired!(now, ctx, async (head) => {
      await relay.sessionExpired(head);
      await beforeExpire?.(head);
    });
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "updateRecord") return updateRecord;
      if (property === "deleteSession" && typeof target.deleteSession === "function") return deleteSession;
      if (property === "sweepExpired" && typeof target.sweepExpired === "function") return sweepExpired;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
