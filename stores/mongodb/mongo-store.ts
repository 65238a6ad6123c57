import { MongoClient, type MongoClientOptions } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { deepFreeze } from "../ledger/frozen-value.js";
import { headToStore, keepIdentity } from "../record-identity.js";
import type {
  HeadCommit,
  RecordMutator,
  RecordPage,
  SessionHead,
  SessionStore,
  SnapshotPageRequest,
  SnapshotRecord,
  SnapshotSubscriber,
  StoreCallContext,
} from "../snapshot-store.js";
import { StatusChannel } from "../status-channel.js";
import { CheckpointChunks } from "./checkpoint-chunks.js";
import { fromHeadDocument, writeHead } from "./head-document.js";
import { conflictBackoff, guarded, isDuplicateKey } from "./mongo-errors.js";
import { changedFields, encodeRecord, nextVersion, type EncodedRecord } from "./record-document.js";
import { RecordReads } from "./record-reads.js";
import { ChangeStreamMultiplexer } from "./status-stream.js";
import { prepareCollections, storeCollections, type StoreCollections } from "./store-collections.js";

/** Configuration of {@link MongoSessionStore}. */
export interface MongoSessionStoreConfig {
  /** Connection string (`mongodb://…` or `mongodb+srv://…`). Ignored when `client` is given. */
  uri?: string;
  /** An existing client to use; the store then does not close it. */
  client?: MongoClient;
  /** Database name. Default `agentd`. */
  database?: string;
  /**
   * Prepended to the collection names `heads`, `snapshots`, `checkpoint_chunks`
   * and `store_meta` (tenant isolation per prefix). Default empty.
   */
  collectionPrefix?: string;
  /** Extra driver options when the store creates the client. */
  clientOptions?: MongoClientOptions;
  /** `updateRecord` gives up after this many version conflicts (ABORTED). Default 1000. */
  maxConflictRetries?: number;
}

interface Opened<S> {
  c: StoreCollections;
  chunks: CheckpointChunks;
  reads: RecordReads<S>;
}

const ignore = (): undefined => undefined;

/** Defaults the store applies unless the URI (or `clientOptions`) sets them. */
const DEFAULT_CLIENT_OPTIONS: MongoClientOptions = { serverSelectionTimeoutMS: 10_000 };

/** Lower-cased names of the options in a connection string's query. */
function uriOptionNames(uri: string): Set<string> {
  const query = uri.indexOf("?");
  if (query < 0) return new Set();
  return new Set([...new URLSearchParams(uri.slice(query + 1)).keys()].map((k) => k.toLowerCase()));
}

/**
 * Driver options for a store-created client: the store's defaults, except
 * those the URI sets (the driver lets object options override the URI, so a
 * default passed alongside would silently win), then `clientOptions`.
 */
export function clientOptionsFor(uri: string, clientOptions?: MongoClientOptions): MongoClientOptions {
  const inUri = uriOptionNames(uri);
  const defaults = Object.fromEntries(Object.entries(DEFAULT_CLIENT_OPTIONS).filter(([key]) => !inUri.has(key.toLowerCase())));
  return { ...defaults, ...clientOptions };
}

/**
 * The session ledger in MongoDB, for many agentd instances sharing one
 * replica set; no transactions. Collections (all `<prefix>…`): `heads`
 * (`_id = sessionId`, compare-and-set on `version`), `snapshots` (one record
 * per snapshot, `_id = snapshotId`, with a per-record `version` for
 * `updateRecord`'s optimistic read-modify-write), `checkpoint_chunks` (a
 * checkpoint over 8 MiB, split so no document nears the 16 MiB limit however
 * long a conversation grows) and `store_meta` (the store format, checked at
 * first use). `commit` inserts the record, then moves the head; when the head
 * moved meanwhile it deletes the record again and resolves undefined.
 * Status subscriptions share ONE change stream per store instance, filtered
 * on the server to status transitions (see STATUS_PIPELINE), so an instance's
 * traffic grows with status changes, not with turns.
 */
export class MongoSessionStore<S = unknown> implements SessionStore<S>, SnapshotSubscriber {
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private ready: Promise<Opened<S>> | undefined;
  private readonly statusStream: ChangeStreamMultiplexer;
  private closed = false;

  constructor(private readonly config: MongoSessionStoreConfig) {
    if (config.client) {
      this.client = config.client;
      this.ownsClient = false;
    } else {
      if (!config.uri) throw new AgentError("INVALID_ARGUMENT", "MongoSessionStore needs a uri (mongodb://host/db) or a client");
      this.client = new MongoClient(config.uri, clientOptionsFor(config.uri, config.clientOptions));
      this.ownsClient = true;
    }
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
      async () => (await this.open()).c.records,
      async (id) => {
        const { c } = await this.open();
        const doc = await c.records.findOne({ _id: id }, { projection: { status: 1, version: 1 } });
        return doc ? { status: doc.status, version: doc.version } : undefined;
      },
    );
  }

  /** The collections, format-checked and indexed once (retried on the next call if that failed). */
  private open(): Promise<Opened<S>> {
    if (this.closed) return Promise.reject(new AgentError("FAILED_PRECONDITION", "the MongoDB session store is closed"));
    if (!this.ready) {
      const attempt = (async () => {
        const db = this.client.db(this.config.database ?? "agentd");
        const c = storeCollections(db, this.config.collectionPrefix ?? "");
        await prepareCollections(db, c);
        const chunks = new CheckpointChunks(c.chunks);
        return { c, chunks, reads: new RecordReads<S>(c.records, chunks) };
      })();
      this.ready = attempt;
      attempt.catch(() => {
        if (this.ready === attempt) this.ready = undefined;
      });
    }
    return guarded("opening the session store (checking its format, creating indexes)", () => this.ready!);
  }

  /** True while the store's change stream is established on the server (tests, diagnostics). */
  get changeStreamOpen(): boolean {
    return this.statusStream.isOpen;
  }

  /** How often the change stream was reopened or resynchronised after a connection loss. */
  get changeStreamReopens(): number {
    return this.statusStream.reopens;
  }

  /** Change-stream events the server delivered to this instance (only status transitions pass its filter). */
  get changeEventsReceived(): number {
    return this.statusStream.eventsReceived;
  }

  /** The session's head, or undefined. */
  async getHead(sessionId: string, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const { c } = await this.open();
    const doc = await guarded(`reading session ${sessionId}`, () => c.heads.findOne({ _id: sessionId }));
    return doc ? fromHeadDocument(doc) : undefined;
  }

  /**
   * Inserts the record (chunks first for a big checkpoint), then writes the
   * head where its version is `expectedVersion`; on a conflict deletes what it
   * inserted and resolves undefined. A record that cannot fit one document
   * fails with RESOURCE_EXHAUSTED before anything is written.
   */
  async commit(commit: HeadCommit<S>, _ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const head = headToStore(commit);
    const { c, chunks } = await this.open();
    const record = commit.record;
    const encoded = record ? encodeRecord(record, nextVersion(undefined), false) : undefined;
    return guarded(`committing session ${head.sessionId}`, async () => {
      if (encoded) await this.insertRecord(encoded, c, chunks);
      // An error here leaves the record in place: the head may have moved (the outcome is unknown),
      // and a head pointing at a deleted record would be worse than an unreferenced record.
      if (!(await writeHead(c.heads, head, commit.expectedVersion))) {
        if (encoded) {
          await c.records.deleteOne({ _id: encoded.doc._id, version: encoded.doc.version }).catch(ignore);
          if (encoded.chunks) await chunks.remove(encoded.chunks.ref.set).catch(ignore);
        }
        return undefined;
      }
      if (encoded) this.statusStream.deliver(encoded.doc._id, { status: encoded.doc.status, version: encoded.doc.version });
      return head;
    });
  }

  private async insertRecord(encoded: EncodedRecord, c: StoreCollections, chunks: CheckpointChunks): Promise<void> {
    if (encoded.chunks) await chunks.write(encoded.chunks);
    try {
      await c.records.insertOne(encoded.doc);
    } catch (err) {
      if (encoded.chunks) await chunks.remove(encoded.chunks.ref.set).catch(ignore);
      if (isDuplicateKey(err)) {
        throw new AgentError("ALREADY_EXISTS", `snapshot ${encoded.doc._id} already exists; a commit needs a new snapshot ID`);
      }
      throw err;
    }
  }

  /** The record (checkpoint joined from its chunks), or undefined. */
  async getRecord(snapshotId: string, _ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined> {
    const { reads } = await this.open();
    return (await guarded(`reading snapshot ${snapshotId}`, () => reads.load(snapshotId)))?.record;
  }

  /** The chain from the nearest checkpoint: the target, then one range query on (sessionId, turnIndex). */
  async getChain(snapshotId: string, _ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined> {
    const { reads } = await this.open();
    return guarded(`reading the chain of snapshot ${snapshotId}`, () => reads.chain(snapshotId));
  }

  /** The session's records newest first, keyset-paginated. */
  async listRecords(sessionId: string, page?: SnapshotPageRequest, _ctx?: StoreCallContext): Promise<RecordPage<S>> {
    const { reads } = await this.open();
    return guarded(`listing the snapshots of session ${sessionId}`, () => reads.list(sessionId, page));
  }

  /**
   * Optimistic read → mutator → conditional `$set` of the changed fields on
   * the record's version, retried (with backoff) on a conflict. `status` is
   * set only when it changes: that is what status subscribers are sent.
   */
  async updateRecord(snapshotId: string, mutator: RecordMutator<S>, _ctx?: StoreCallContext): Promise<SnapshotRecord<S> | null> {
    const { c, chunks, reads } = await this.open();
    const maxRetries = this.config.maxConflictRetries ?? 1000;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      const loaded = await guarded(`reading snapshot ${snapshotId}`, () => reads.load(snapshotId));
      if (!loaded) return null;
      const result = mutator(deepFreeze(loaded.record));
      if (result === null) return null;
      const next = keepIdentity(result, loaded.record);
      const before = loaded.doc;
      const reuse = before.checkpointChunks && loaded.chunkedJson !== undefined ? { ref: before.checkpointChunks, json: loaded.chunkedJson } : undefined;
      const encoded = encodeRecord(next, nextVersion(before.version), true, reuse);
      const written = await guarded(`updating snapshot ${snapshotId}`, async () => {
        if (encoded.chunks) await chunks.write(encoded.chunks);
        const res = await c.records.updateOne({ _id: snapshotId, version: before.version }, { $set: changedFields(before, encoded.doc) });
        const applied = res.matchedCount === 1;
        // Drop the chunks nobody references any more: the replaced checkpoint's, or ours when we lost the race.
        if (applied) {
          const old = before.checkpointChunks;
          if (old && old.set !== encoded.doc.checkpointChunks?.set) await chunks.remove(old.set).catch(ignore);
        } else if (encoded.chunks) {
          await chunks.remove(encoded.chunks.ref.set).catch(ignore);
        }
        return applied;
      });
      if (!written) {
        await conflictBackoff(attempt);
        continue;
      }
      this.statusStream.deliver(snapshotId, { status: encoded.doc.status, version: encoded.doc.version });
      return next;
    }
    throw new AgentError("ABORTED", `snapshot ${snapshotId}: gave up after ${maxRetries} concurrent-write conflicts; retry the request`);
  }

  /** Current status (if the record exists), then every change from any instance, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, _ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const channel: StatusChannel = new StatusChannel(signal, () => this.statusStream.remove(snapshotId, channel));
    if (!channel.isClosed && !this.closed) this.statusStream.add(snapshotId, channel);
    return channel;
  }

  /**
   * Health probe: a `ping` command to the server (bounded by the client's
   * server selection timeout). Rejects UNAVAILABLE while the server cannot be
   * reached, FAILED_PRECONDITION once the store is closed.
   */
  async ping(): Promise<void> {
    if (this.closed) throw new AgentError("FAILED_PRECONDITION", "the MongoDB session store is closed");
    await guarded("pinging the server", () => this.client.db(this.config.database ?? "agentd").command({ ping: 1 }));
  }

  /** Ends subscriptions, closes the change stream and (when the store created it) the client. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.statusStream.closeAll();
    this.closed = true;
    if (this.ownsClient) await this.client.close();
  }
}
