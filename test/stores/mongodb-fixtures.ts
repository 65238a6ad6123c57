import { randomBytes } from "node:crypto";
import { MongoClient, type CommandStartedEvent, type CommandSucceededEvent, type Db, type Document } from "mongodb";
import { afterAll, beforeAll } from "vitest";
import type { ChunkLogKey } from "../../stores/chunk-log.js";
import type { ChunkStreamSource } from "../../stores/mongodb/chunk-stream.js";
import { MongoSessionStore, type MongoSessionStoreConfig } from "../../stores/mongodb/mongo-store.js";
import type { StoreLogger } from "../../stores/mongodb/store-logger.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { eventually, type CounterState } from "./snapshot-factory.js";

/** A collection prefix no other test uses. */
export function freshPrefix(): string {
  return `t${randomBytes(5).toString("hex")}_`;
}

/** What a store's driver sent (and what the server answered), from command monitoring. */
export interface CommandLog {
  readonly started: CommandStartedEvent[];
  readonly succeeded: CommandSucceededEvent[];
  /** The started commands of these names, in order. */
  named(...names: string[]): CommandStartedEvent[];
  /** Forgets everything recorded so far. */
  clear(): void;
}

/** Records every command the store's client sends; the store must be created with `clientOptions: { monitorCommands: true }`. */
export function commandLog(store: MongoSessionStore<unknown>): CommandLog {
  const started: CommandStartedEvent[] = [];
  const succeeded: CommandSucceededEvent[] = [];
  const client = store.driverClient;
  if (!client.options.monitorCommands)
    throw new Error("create the store with clientOptions: { monitorCommands: true }");
  client.on("commandStarted", (event) => started.push(event));
  client.on("commandSucceeded", (event) => succeeded.push(event));
  return {
    started,
    succeeded,
    named: (...names) => started.filter((e) => names.includes(e.commandName)),
    clear: () => {
      started.length = 0;
      succeeded.length = 0;
    },
  };
}

/** Runs an admin command (e.g. a mongo-java-server test hook) through a short-lived client. */
export async function adminCommand(uri: string, command: Document): Promise<Document> {
  const client = new MongoClient(uri);
  try {
    return await client.db("admin").command(command);
  } finally {
    await client.close();
  }
}

/**
 * Has the server end its change-stream cursors with no event (the test backend's
 * `agentdTestCloseChangeStreams` hook) once the store under test reports its stream open
 * (`isOpen`) and the server holds at least one such cursor; `beforeTry` runs right before each
 * call of the hook. The store reports its stream open once the aggregate answered, yet a CI run
 * once found no cursor on the server at that point (the hook closed 0): until the hook finds one,
 * it is called again once the store reports the stream open. Returns how many it closed.
 */
export async function closeChangeStreamCursors(
  uri: string,
  isOpen: () => boolean,
  beforeTry: () => void = () => {},
): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    await eventually(isOpen);
    beforeTry();
    const { closed } = await adminCommand(uri, { agentdTestCloseChangeStreams: 1 });
    if (typeof closed === "number" && closed > 0) return closed;
  }
  throw new Error("the server never held a change-stream cursor while the store reported its stream open");
}

/** A logger that keeps every line (message and fields). */
export function capturingLogger(): StoreLogger & { lines: { message: string; fields: Record<string, unknown> }[] } {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  return {
    lines,
    warn: (fields, message) => lines.push({ message, fields }),
    info: (fields, message) => lines.push({ message, fields }),
  };
}

/**
 * Holds the `n` requests a store makes for its chunk collection after its first `baselines` ones:
 * with `baselines` watchers just started (each asks once for its baseline read), those are the
 * requests that open their change streams, so only in-process delivery can wake them until
 * `release` lets them go on. `firstHeld` resolves when the first of them is held.
 */
export function holdStreamOpening(
  store: MongoSessionStore<unknown>,
  baselines: number,
  n: number,
): { held: () => number; firstHeld: Promise<void>; release: () => void } {
  const source = (store as unknown as { chunkLogs: { source: ChunkStreamSource } }).chunkLogs.source;
  const collection = source.collection;
  let calls = 0;
  let held = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const firstHeld = new Promise<void>((resolve) => (reached = resolve));
  source.collection = async () => {
    const call = ++calls;
    if (call > baselines && call <= baselines + n) {
      held++;
      reached();
      await released;
    }
    return collection();
  };
  return { held: () => held, firstHeld, release };
}

/**
 * Resolves once every chunk watcher of `key` on `store` has its baseline read answered: an append
 * by another instance after that is one the watch must report; one the baseline already counts was
 * made "before the watch", which by contract wakes nobody.
 */
export async function watchBaselinesRead(store: MongoSessionStore<unknown>, key: ChunkLogKey): Promise<void> {
  const watchers = (
    store as unknown as { chunkLogs: { watchers: { of(key: ChunkLogKey): { baseline: Promise<void> }[] } } }
  ).chunkLogs.watchers;
  await Promise.all(watchers.of(key).map((w) => w.baseline));
}

/** A mongo-java-server for one test file, a client of it and the stores its tests open (see {@link useMongoServer}). */
export interface MongoTestServer {
  readonly server: MongoJavaServer;
  /** The test database through a client of the test file's own (not a store's). */
  readonly db: Db;
  /** A store on the test database with this collection prefix (default: a fresh one), closed after the file's tests. */
  storeOn(prefix?: string, extra?: Partial<MongoSessionStoreConfig>): MongoSessionStore<CounterState>;
}

/**
 * Starts a mongo-java-server before the test file's tests (one JVM per file) and stops it after
 * them, closing every store `storeOn` opened and the file's client first.
 */
export function useMongoServer(database: string): MongoTestServer {
  let server: MongoJavaServer | undefined;
  let raw: MongoClient | undefined;
  let db: Db | undefined;
  const stores: MongoSessionStore<CounterState>[] = [];
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    raw = new MongoClient(server.uri);
    db = raw.db(database);
  }, 300_000);
  afterAll(async () => {
    for (const store of stores.splice(0)) await store.close();
    await raw?.close();
    await server?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the test MongoDB server is not started yet (use it inside a test)");
    return value;
  };
  return {
    get server() {
      return started(server);
    },
    get db() {
      return started(db);
    },
    storeOn(prefix = freshPrefix(), extra = {}) {
      const store = new MongoSessionStore<CounterState>({
        uri: started(server).uri,
        database,
        collectionPrefix: prefix,
        ...extra,
      });
      stores.push(store);
      return store;
    },
  };
}
