import { MongoClient, type Collection, type MongoClientOptions } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SessionSnapshot, SnapshotStatus } from "../../src/types/snapshot.js";
import { assertValidSnapshotId, bindIdentity, newSnapshotId } from "../snapshot-identity.js";
import { decodePageToken, encodePageToken, pageSizeOf } from "../snapshot-order.js";
import type {
  SessionStore,
  SnapshotMutator,
  SnapshotPage,
  SnapshotPageRequest,
  SnapshotSubscriber,
  StoreCallContext,
} from "../snapshot-store.js";
import { StatusChannel } from "../status-channel.js";
import { fromSnapshotDocument, mongoError, nextVersion, toSnapshotDocument, type SnapshotDocument } from "./snapshot-document.js";
import { ChangeStreamMultiplexer } from "./status-stream.js";

/** Configuration of {@link MongoSessionStore}. */
export interface MongoSessionStoreConfig {
  /** Connection string (`mongodb://…` or `mongodb+srv://…`). Ignored when `client` is given. */
  uri?: string;
  /** An existing client to use; the store then does not close it. */
  client?: MongoClient;
  /** Database name. Default `agentd`. */
  database?: string;
  /** Prepended to the collection name `snapshots` (tenant isolation per prefix). Default empty. */
  collectionPrefix?: string;
  /** Extra driver options when the store creates the client. */
  clientOptions?: MongoClientOptions;
  /** Give up a save after this many version conflicts (ABORTED). Default 1000. */
  maxConflictRetries?: number;
}

const DUPLICATE_KEY = 11000;

/**
 * A session store in MongoDB, for many agentd instances sharing one replica
 * set. Each snapshot is one document keyed `_id = snapshotId` with a `version`
 * for optimistic concurrency: `saveSnapshot` reads, applies the mutator, and
 * writes with `insertOne` (new row) or `replaceOne({_id, version})`, retrying
 * on conflict — no transactions, no lost update across instances. The index
 * `{sessionId: 1, createdAt: -1, _id: -1}` serves latest-by-session and listing
 * and is created on first use. Status subscriptions share ONE change stream per
 * store instance (see {@link ChangeStreamMultiplexer}), which needs a replica
 * set or sharded cluster (or mongo-java-server with its oplog). A row over
 * 16 MiB fails with RESOURCE_EXHAUSTED and leaves the stored row untouched.
 */
export class MongoSessionStore<S = unknown> implements SessionStore<S>, SnapshotSubscriber {
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly collectionName: string;
  private readonly databaseName: string;
  private ready: Promise<Collection<SnapshotDocument>> | undefined;
  private readonly statusStream: ChangeStreamMultiplexer;
  private closed = false;

  constructor(private readonly config: MongoSessionStoreConfig) {
    if (config.client) {
      this.client = config.client;
      this.ownsClient = false;
    } else {
      if (!config.uri) throw new AgentError("INVALID_ARGUMENT", "MongoSessionStore needs a uri (mongodb://host/db) or a client");
      this.client = new MongoClient(config.uri, { serverSelectionTimeoutMS: 10_000, ...config.clientOptions });
      this.ownsClient = true;
    }
    this.databaseName = config.database ?? "agentd";
    this.collectionName = `${config.collectionPrefix ?? ""}snapshots`;
    // After a lost connection comes back, make subscribers catch up (see ChangeStreamMultiplexer.resync).
    // The driver resumes change streams by itself, often without clearing the pool, so any
    // connection failure counts as a loss and the next established connection as the recovery.
    let connectionLost = false;
    const lost = (): void => {
      connectionLost = true;
    };
    const recovered = (): void => {
      if (!connectionLost) return;
      connectionLost = false;
      this.statusStream.resync();
    };
    this.client.on("connectionPoolCleared", lost);
    this.client.on("connectionCheckOutFailed", lost);
    this.client.on("connectionClosed", (event) => {
      if (event.reason === "error") lost();
    });
    this.client.on("connectionReady", recovered);
    this.client.on("connectionPoolReady", recovered);
    this.statusStream = new ChangeStreamMultiplexer(
      () => this.collection(),
      async (id) => {
        const doc = await (await this.collection()).findOne({ _id: id }, { projection: { status: 1, version: 1 } });
        return doc ? { status: doc.status, version: doc.version } : undefined;
      },
    );
  }

  /** The collection, with its index ensured once (retried on the next call if creating it failed). */
  private collection(): Promise<Collection<SnapshotDocument>> {
    if (this.closed) return Promise.reject(new AgentError("FAILED_PRECONDITION", "the MongoDB session store is closed"));
    if (!this.ready) {
      const attempt = (async () => {
        const collection = this.client.db(this.databaseName).collection<SnapshotDocument>(this.collectionName);
        await collection.createIndex({ sessionId: 1, createdAt: -1, _id: -1 }, { name: "session_latest" });
        return collection;
      })();
      this.ready = attempt;
      attempt.catch(() => {
        if (this.ready === attempt) this.ready = undefined;
      });
    }
    return this.ready.catch((err: unknown) => {
      throw mongoError(err, "connecting / creating the snapshot index");
    });
  }

  /** True while the store's change stream is open (tests, diagnostics). */
  get changeStreamOpen(): boolean {
    return this.statusStream.isOpen;
  }

  /** How often the change stream was reopened after an error. */
  get changeStreamReopens(): number {
    return this.statusStream.reopens;
  }

  /** The row, or undefined. */
  async getSnapshot(snapshotId: string, _ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined> {
    const collection = await this.collection();
    try {
      const doc = await collection.findOne({ _id: snapshotId });
      return doc ? fromSnapshotDocument<S>(doc) : undefined;
    } catch (err) {
      throw mongoError(err, "reading a snapshot", snapshotId);
    }
  }

  /** The session's newest row (greatest createdAt, then greatest snapshotId), via the session index. */
  async getLatestSnapshot(sessionId: string, ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined> {
    return (await this.listSnapshots(sessionId, { pageSize: 1 }, ctx)).snapshots[0];
  }

  /** The session's rows newest first, keyset-paginated (the token holds the last row's createdAt and ID). */
  async listSnapshots(sessionId: string, page?: SnapshotPageRequest, _ctx?: StoreCallContext): Promise<SnapshotPage<S>> {
    const collection = await this.collection();
    const size = pageSizeOf(page);
    const filter: Record<string, unknown> = { sessionId };
    if (page?.pageToken) {
      const after = decodePageToken(page.pageToken);
      filter.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after.snapshotId } }];
    }
    try {
      const docs = await collection
        .find(filter)
        .sort({ createdAt: -1, _id: -1 })
        .limit(size + 1)
        .toArray();
      const snapshots = docs.slice(0, size).map((d) => fromSnapshotDocument<S>(d));
      if (docs.length <= size) return { snapshots };
      const last = docs[size - 1]!;
      return { snapshots, nextPageToken: encodePageToken({ createdAt: last.createdAt, snapshotId: last._id }) };
    } catch (err) {
      throw mongoError(err, "listing snapshots");
    }
  }

  /** Optimistic read→mutate→conditional write, retried on version conflicts. */
  async saveSnapshot(snapshotId: string | undefined, mutator: SnapshotMutator<S>, _ctx?: StoreCallContext): Promise<SessionSnapshot<S> | null> {
    const id = snapshotId ?? newSnapshotId();
    assertValidSnapshotId(id);
    const collection = await this.collection();
    const maxRetries = this.config.maxConflictRetries ?? 1000;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      let existingDoc: SnapshotDocument | null;
      try {
        existingDoc = await collection.findOne({ _id: id });
      } catch (err) {
        throw mongoError(err, "reading a snapshot", id);
      }
      const existing = existingDoc ? fromSnapshotDocument<S>(existingDoc) : undefined;
      const result = await mutator(existing);
      if (result === null) return null;
      const row = bindIdentity(result, id, existing);
      const doc = toSnapshotDocument(row, nextVersion(existingDoc?.version), existing?.status);
      try {
        if (!existingDoc) {
          await collection.insertOne(doc);
        } else {
          const res = await collection.replaceOne({ _id: id, version: existingDoc.version }, doc);
          if (res.matchedCount === 0) {
            await backoff(attempt);
            continue;
          }
        }
      } catch (err) {
        if ((err as { code?: number }).code === DUPLICATE_KEY) {
          await backoff(attempt);
          continue;
        }
        throw mongoError(err, "writing a snapshot", id);
      }
      this.statusStream.deliver(id, { status: doc.status, version: doc.version });
      return fromSnapshotDocument<S>(doc);
    }
    throw new AgentError("ABORTED", `snapshot ${id}: gave up after ${maxRetries} concurrent-write conflicts; retry the request`);
  }

  /** Current status (if the row exists), then every change from any instance, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const channel: StatusChannel = new StatusChannel(signal, () => this.statusStream.remove(snapshotId, channel));
    if (!channel.isClosed && !this.closed) this.statusStream.add(snapshotId, channel);
    return channel;
  }

  /** Ends subscriptions, closes the change stream and (when the store created it) the client. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.statusStream.closeAll();
    this.closed = true;
    if (this.ownsClient) await this.client.close();
  }
}

function backoff(attempt: number): Promise<void> {
  if (attempt < 2) return Promise.resolve();
  const ms = Math.min(50, 2 ** Math.min(attempt, 6)) * Math.random();
  return new Promise((resolve) => setTimeout(resolve, ms));
}
