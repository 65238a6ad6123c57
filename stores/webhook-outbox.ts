import { AgentError } from "../src/errors/agent-error.js";

/** Where a webhook event stands: waiting for an attempt, answered 2xx, or given up on. */
export type WebhookEventState = "pending" | "delivered" | "failed";

/** The instance delivering an event now, until `until` (epoch ms); a lapsed lease may be claimed by any instance. */
export interface WebhookLease {
  instance: string;
  until: number;
}

/**
 * One event of the webhook outbox: the body as it is signed and sent (the
 * same bytes on every attempt, under the same `id`), who it belongs to, and
 * where its delivery stands.
 */
export interface WebhookEvent {
  /** The Standard Webhooks `webhook-id` (`msg_…`), unique in the outbox. */
  id: string;
  /** The event type, e.g. `invocation.completed`. */
  type: string;
  /** Owner (tenant) of the session the event is about; "" is the anonymous owner. */
  tenant: string;
  agent: string;
  sessionId: string;
  snapshotId: string;
  /** When the event happened (epoch ms); also its `webhook-timestamp`'s base at the first attempt. */
  createdAt: number;
  /** The JSON body sent on every attempt. */
  body: string;
  /** The endpoint it goes to (without credentials or query), or "" when none is configured. */
  url: string;
  state: WebhookEventState;
  /** Attempts made so far. */
  attempts: number;
  /** Earliest epoch ms of the next attempt (pending events). */
  nextAttemptAt: number;
  /** The last attempt's epoch ms. */
  lastAttemptAt?: number;
  /** Why the last attempt failed: status code or transport error, never the receiver's response body. */
  lastError?: string;
  /** Set while an instance delivers it. */
  lease?: WebhookLease;
}

/** A page request of {@link WebhookOutbox.list}. */
export interface WebhookEventQuery {
  /** Only this owner's events (required; "" is the anonymous owner). */
  tenant: string;
  /** Only events in this state; unset: all. */
  state?: WebhookEventState;
  /** At most this many (default 50, max 1000: clamped; < 0 → INVALID_ARGUMENT). */
  pageSize?: number;
  /** A previous page's `nextPageToken`; a malformed one → INVALID_ARGUMENT. */
  pageToken?: string;
}

/** One page of {@link WebhookOutbox.list}, newest first. */
export interface WebhookEventPage {
  events: WebhookEvent[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

/** Options of {@link WebhookOutbox.claim}. */
export interface WebhookClaimOptions {
  /** Leave the events of these endpoints (`WebhookEvent.url`) unclaimed. */
  skipUrls?: readonly string[];
}

/** What an attempt changes of a claimed event. */
export type WebhookAttemptUpdate = Pick<WebhookEvent, "state" | "attempts" | "nextAttemptAt"> &
  Pick<Partial<WebhookEvent>, "lastAttemptAt" | "lastError">;

/**
 * The durable outbox of webhook events a store keeps (optional capability of
 * a `SessionStore`), shared by every instance using the store. Guarantees in
 * every implementation: `put` is idempotent by ID (the first event of an ID
 * stays); of instances claiming at once, each due event goes to exactly one
 * (until its lease lapses); `settle` writes only while the caller's lease
 * holds, so an instance whose lease lapsed cannot overwrite another's outcome.
 */
export interface WebhookOutbox {
  /** Stores `event` unless one with its ID exists; resolves true when stored now. */
  put(event: WebhookEvent): Promise<boolean>;
  /**
   * Leases to `instance` until `now + leaseMs` up to `limit` pending events
   * due at `now` (nextAttemptAt <= now) whose lease is absent or lapsed,
   * oldest first, and returns them (with the lease). Events whose `url` is
   * in `options.skipUrls` (endpoints the caller is busy with) are neither
   * leased nor counted, so they never hold back other endpoints' events.
   */
  claim(
    instance: string,
    now: number,
    leaseMs: number,
    limit: number,
    options?: WebhookClaimOptions,
  ): Promise<WebhookEvent[]>;
  /** Records an attempt's outcome and drops the lease if `instance` still holds it; resolves false otherwise. */
  settle(id: string, instance: string, update: WebhookAttemptUpdate): Promise<boolean>;
  /** The tenant's events, newest first (createdAt, then ID), keyset-paginated. */
  list(query: WebhookEventQuery): Promise<WebhookEventPage>;
  /** The event with this ID, or undefined. */
  get(id: string): Promise<WebhookEvent | undefined>;
  /** Removes delivered and failed events created before `before` (epoch ms); resolves to how many. */
  prune(before: number): Promise<number>;
  /** The createdAt of the oldest pending event, or undefined when none is pending (outbox lag). */
  oldestPending(): Promise<number | undefined>;
}

/** A store that keeps a webhook outbox. */
export interface WebhookOutboxStore {
  /** The store's outbox (the same object on every call). */
  webhookOutbox(): WebhookOutbox;
}

/** True when `store` keeps a webhook outbox (required for `--webhook-url`). */
export function hasWebhookOutbox(store: unknown): store is WebhookOutboxStore {
  return typeof (store as Partial<WebhookOutboxStore> | undefined)?.webhookOutbox === "function";
}

/** Default and maximum page sizes of {@link WebhookOutbox.list}. */
export const WEBHOOK_PAGE = { default: 50, max: 1000 } as const;

/** The page size to use for `requested`: default for 0/unset, clamped to the max; INVALID_ARGUMENT below 0. */
export function webhookPageSize(requested: number | undefined): number {
  if (requested !== undefined && (!Number.isInteger(requested) || requested < 0))
    throw new AgentError("INVALID_ARGUMENT", `page_size must be a non-negative integer, got ${requested}`);
  return Math.min(requested || WEBHOOK_PAGE.default, WEBHOOK_PAGE.max);
}

/** The keyset cursor after `event` (newest-first order: createdAt desc, id desc). */
export function webhookCursor(event: Pick<WebhookEvent, "createdAt" | "id">): string {
  return `${event.createdAt}:${event.id}`;
}

/** Parses a {@link webhookCursor}; INVALID_ARGUMENT when malformed. */
export function parseWebhookCursor(token: string): { createdAt: number; id: string } {
  const colon = token.indexOf(":");
  const createdAt = Number(token.slice(0, colon));
  const id = token.slice(colon + 1);
  if (colon < 1 || !Number.isSafeInteger(createdAt) || id === "")
    throw new AgentError("INVALID_ARGUMENT", `malformed webhook page token "${token.slice(0, 64)}"`);
  return { createdAt, id };
}

/** True when `event` comes after `cursor` in newest-first order. */
export function isAfterCursor(event: WebhookEvent, cursor: { createdAt: number; id: string }): boolean {
  return event.createdAt < cursor.createdAt || (event.createdAt === cursor.createdAt && event.id < cursor.id);
}

/** Newest-first comparator (createdAt desc, then id desc). */
export function newestFirst(a: WebhookEvent, b: WebhookEvent): number {
  return b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/** True when `event` may be claimed at `now`: pending, due, lease absent or lapsed, and its URL not skipped. */
export function isClaimable(event: WebhookEvent, now: number, options?: WebhookClaimOptions): boolean {
  return (
    event.state === "pending" &&
    event.nextAttemptAt <= now &&
    (!event.lease || event.lease.until <= now) &&
    !(options?.skipUrls?.includes(event.url) ?? false)
  );
}

/** Pages `events` (any order) for `query`: the tenant's, in the state asked for, newest first after the token. */
export function pageOfWebhookEvents(events: Iterable<WebhookEvent>, query: WebhookEventQuery): WebhookEventPage {
  const size = webhookPageSize(query.pageSize);
  const cursor = query.pageToken ? parseWebhookCursor(query.pageToken) : undefined;
  const matching = [...events]
    .filter((e) => e.tenant === query.tenant && (!query.state || e.state === query.state))
    .filter((e) => !cursor || isAfterCursor(e, cursor))
    .sort(newestFirst);
  const page = matching.slice(0, size);
  return matching.length > size ? { events: page, nextPageToken: webhookCursor(page.at(-1)!) } : { events: page };
}
