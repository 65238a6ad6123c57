import type { Collection, Db, Filter } from "mongodb";
import {
  parseWebhookCursor,
  webhookCursor,
  webhookPageSize,
  type WebhookAttemptUpdate,
  type WebhookClaimOptions,
  type WebhookEvent,
  type WebhookEventPage,
  type WebhookEventQuery,
  type WebhookOutbox,
} from "../webhook-outbox.js";
import { ensureIndexes, type IndexSpec } from "./index-setup.js";
import { guarded, isDuplicateKey } from "./mongo-errors.js";

/** How an event is stored in `<prefix>webhook_outbox`: the event with `_id` = its ID. */
type WebhookDocument = Omit<WebhookEvent, "id"> & { _id: string };

/** The outbox's indexes: the due pending events for claims, a tenant's newest first for listings. */
export const WEBHOOK_INDEXES: readonly IndexSpec[] = [
  { name: "webhook_due", key: { state: 1, nextAttemptAt: 1 } },
  { name: "webhook_tenant", key: { tenant: 1, createdAt: -1, _id: -1 } },
];

/**
 * The webhook outbox in MongoDB (`<prefix>webhook_outbox`, one document per
 * event). A claim is one `findOneAndUpdate` per event, filtered on the event
 * being due and its lease absent or lapsed, so of instances claiming at once
 * exactly one gets each event; `settle` is filtered on the caller's lease.
 * Writes use the store's database settings (majority, journaled).
 */
export class MongoWebhookOutbox implements WebhookOutbox {
  private readonly events: Collection<WebhookDocument>;
  private indexed: Promise<void> | undefined;

  constructor(db: Db, prefix: string) {
    this.events = db.collection<WebhookDocument>(`${prefix}webhook_outbox`);
  }

  /** Inserts `event`; a duplicate ID leaves the stored one. */
  async put(event: WebhookEvent): Promise<boolean> {
    await this.ready();
    const { id, ...rest } = event;
    try {
      await guarded("storing a webhook event", () => this.events.insertOne({ _id: id, ...rest }));
      return true;
    } catch (err) {
      if (isDuplicateKey(err) || isDuplicateKey((err as Error).cause)) return false;
      throw err;
    }
  }

  /** Leases the due events one by one, oldest first (see `WebhookOutbox.claim`). */
  async claim(
    instance: string,
    now: number,
    leaseMs: number,
    limit: number,
    options?: WebhookClaimOptions,
  ): Promise<WebhookEvent[]> {
    await this.ready();
    const claimed: WebhookEvent[] = [];
    const filter: Filter<WebhookDocument> = {
      state: "pending",
      nextAttemptAt: { $lte: now },
      $or: [{ lease: { $exists: false } }, { "lease.until": { $lte: now } }],
      ...(options?.skipUrls?.length ? { url: { $nin: [...options.skipUrls] } } : {}),
    };
    while (claimed.length < limit) {
      const doc = await guarded("claiming a webhook event", () =>
        this.events.findOneAndUpdate(
          filter,
          { $set: { lease: { instance, until: now + leaseMs } } },
          { sort: { nextAttemptAt: 1, createdAt: 1 }, returnDocument: "after" },
        ),
      );
      if (!doc) break;
      claimed.push(fromDocument(doc));
    }
    return claimed;
  }

  /** Writes the outcome while `instance` holds the lease. */
  async settle(id: string, instance: string, update: WebhookAttemptUpdate): Promise<boolean> {
    await this.ready();
    const result = await guarded("recording a webhook attempt", () =>
      this.events.updateOne({ _id: id, "lease.instance": instance }, { $set: update, $unset: { lease: "" } }),
    );
    return result.matchedCount === 1;
  }

  /** The tenant's events, newest first, keyset-paginated on (createdAt, _id). */
  async list(query: WebhookEventQuery): Promise<WebhookEventPage> {
    await this.ready();
    const size = webhookPageSize(query.pageSize);
    const cursor = query.pageToken ? parseWebhookCursor(query.pageToken) : undefined;
    const filter: Filter<WebhookDocument> = {
      tenant: query.tenant,
      ...(query.state ? { state: query.state } : {}),
      ...(cursor
        ? {
            $or: [{ createdAt: { $lt: cursor.createdAt } }, { createdAt: cursor.createdAt, _id: { $lt: cursor.id } }],
          }
        : {}),
    };
    const docs = await guarded("listing webhook events", () =>
      this.events
        .find(filter)
        .sort({ createdAt: -1, _id: -1 })
        .limit(size + 1)
        .toArray(),
    );
    const events = docs.slice(0, size).map(fromDocument);
    return docs.length > size ? { events, nextPageToken: webhookCursor(events.at(-1)!) } : { events };
  }

  /** The event, or undefined. */
  async get(id: string): Promise<WebhookEvent | undefined> {
    await this.ready();
    const doc = await guarded("reading a webhook event", () => this.events.findOne({ _id: id }));
    return doc ? fromDocument(doc) : undefined;
  }

  /** Removes settled events created before `before`. */
  async prune(before: number): Promise<number> {
    await this.ready();
    const result = await guarded("pruning webhook events", () =>
      this.events.deleteMany({ state: { $in: ["delivered", "failed"] }, createdAt: { $lt: before } }),
    );
    return result.deletedCount;
  }

  /** The oldest pending event's createdAt. */
  async oldestPending(): Promise<number | undefined> {
    await this.ready();
    const doc = await guarded("reading the webhook outbox lag", () =>
      this.events.findOne({ state: "pending" }, { sort: { createdAt: 1 }, projection: { createdAt: 1 } }),
    );
    return doc?.createdAt;
  }

  private ready(): Promise<void> {
    this.indexed ??= ensureIndexes(this.events, WEBHOOK_INDEXES).then(
      () => undefined,
      (err: unknown) => {
        this.indexed = undefined;
        throw err;
      },
    );
    return this.indexed;
  }
}

function fromDocument(doc: WebhookDocument): WebhookEvent {
  const { _id, ...rest } = doc;
  return { id: _id, ...rest };
}
