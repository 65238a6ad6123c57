import {
  isClaimable,
  type WebhookClaimOptions,
  pageOfWebhookEvents,
  type WebhookAttemptUpdate,
  type WebhookEvent,
  type WebhookEventPage,
  type WebhookEventQuery,
  type WebhookOutbox,
} from "./webhook-outbox.js";

/**
 * The webhook outbox of the in-memory store: a map of this process (lost
 * with it, like the sessions). Each operation runs synchronously, so a claim
 * is exclusive among callers of this process.
 */
export class MemoryWebhookOutbox implements WebhookOutbox {
  private readonly events = new Map<string, WebhookEvent>();

  /** Stores a copy of `event` unless its ID is taken. */
  async put(event: WebhookEvent): Promise<boolean> {
    if (this.events.has(event.id)) return false;
    this.events.set(event.id, structuredClone(event));
    return true;
  }

  /** Leases the due events, oldest first (see `WebhookOutbox.claim`). */
  async claim(
    instance: string,
    now: number,
    leaseMs: number,
    limit: number,
    options?: WebhookClaimOptions,
  ): Promise<WebhookEvent[]> {
    const due = [...this.events.values()]
      .filter((e) => isClaimable(e, now, options))
      .sort((a, b) => a.createdAt - b.createdAt);
    return due.slice(0, limit).map((e) => {
      const claimed = { ...e, lease: { instance, until: now + leaseMs } };
      this.events.set(e.id, claimed);
      return structuredClone(claimed);
    });
  }

  /** Writes the outcome while `instance` holds the lease. */
  async settle(id: string, instance: string, update: WebhookAttemptUpdate): Promise<boolean> {
    const event = this.events.get(id);
    if (event?.lease?.instance !== instance) return false;
    const { lease: _lease, ...rest } = event;
    this.events.set(id, { ...rest, ...update });
    return true;
  }

  /** The tenant's events, newest first. */
  async list(query: WebhookEventQuery): Promise<WebhookEventPage> {
    return structuredClone(pageOfWebhookEvents(this.events.values(), query));
  }

  /** The event, or undefined. */
  async get(id: string): Promise<WebhookEvent | undefined> {
    const event = this.events.get(id);
    return event && structuredClone(event);
  }

  /** Removes settled events created before `before`. */
  async prune(before: number): Promise<number> {
    let removed = 0;
    for (const [id, e] of this.events)
      if (e.state !== "pending" && e.createdAt < before && this.events.delete(id)) removed++;
    return removed;
  }

  /** The oldest pending event's createdAt. */
  async oldestPending(): Promise<number | undefined> {
    let oldest: number | undefined;
    for (const e of this.events.values())
      if (e.state === "pending" && (oldest === undefined || e.createdAt < oldest)) oldest = e.createdAt;
    return oldest;
  }
}
