import { MongoClient, type Db } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { CheckpointChunks } from "./checkpoint-chunks.js";
import { clientOptionsFor, driverUri, uriDatabase } from "./connection-settings.js";
import { consistencyOf } from "./consistency.js";
import { guarded } from "./mongo-errors.js";
import type { RecordDocument } from "./record-document.js";
import { RecordReads } from "./record-reads.js";
import type { MongoSessionStoreConfig } from "./store-config.js";
import { prepareCollections, storeCollections, type StoreCollections } from "./store-collections.js";

/** The driver client a store uses, whether it closes it, its database and the consistency warnings. */
export interface StoreConnection {
  client: MongoClient;
  /** True when the store created the client (and so closes it). */
  ownsClient: boolean;
  db: Db;
  /** One line per consistency setting weaker than the store's default (see consistency.ts); also sent to `logger`. */
  warnings: readonly string[];
}

/** The collections of a store once prepared, with its checkpoint chunks and record reads. */
export interface OpenedStore<S> {
  c: StoreCollections;
  chunks: CheckpointChunks;
  reads: RecordReads<S>;
}

/**
 * The client of `config` (the given one, or a new one for `config.uri`) and
 * its database (`config.database`, else the URI's, else `agentd`) with the
 * store's consistency settings; each weaker setting is logged as a warning.
 * Fails INVALID_ARGUMENT without `uri` or `client`, or when the URI sets
 * unacknowledged writes (w=0).
 */
export function storeConnection(config: MongoSessionStoreConfig): StoreConnection {
  let client: MongoClient;
  let ownsClient: boolean;
  if (config.client) {
    client = config.client;
    ownsClient = false;
  } else {
    if (!config.uri)
      throw new AgentError("INVALID_ARGUMENT", "MongoSessionStore needs a uri (mongodb://host/db) or a client");
    client = new MongoClient(driverUri(config.uri), clientOptionsFor(config.uri, config.clientOptions));
    ownsClient = true;
  }
  const consistency = consistencyOf(client.options);
  const warnings = consistency.warnings;
  for (const warning of warnings) config.logger?.warn({ store: "mongodb" }, warning);
  const db = client.db(
    config.database ?? (config.uri ? uriDatabase(config.uri) : undefined) ?? "agentd",
    consistency.db,
  );
  return { client, ownsClient, db, warnings };
}

/**
 * One attempt at connecting and preparing the store's collections (format
 * check, indexes, change-stream support; see prepareCollections). `settle`
 * is handed every record a read finds still marked pending with its token.
 */
export async function openCollections<S>(
  client: MongoClient,
  db: Db,
  config: MongoSessionStoreConfig,
  settle: (doc: RecordDocument) => void,
): Promise<OpenedStore<S>> {
  // Connect explicitly: when the driver's own first connection (made by the first operation) fails,
  // it keeps the closed topology and every later operation fails "Topology is closed" for good;
  // connect() replaces a topology that is not connected.
  await guarded("connecting to MongoDB", () => client.connect());
  const c = storeCollections(db, config.collectionPrefix ?? "", config.ttlGraceMs ?? 0);
  await prepareCollections(db, c, (message) => config.logger?.warn({ store: "mongodb" }, message));
  const chunks = new CheckpointChunks(c.chunks);
  const reads = new RecordReads<S>(c.records, chunks, c.heads, config.listPageStateBytes, settle);
  return { c, chunks, reads };
}
