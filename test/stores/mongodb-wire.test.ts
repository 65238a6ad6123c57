import { MongoClient, type CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listSnapshots } from "../../src/runtime/sessions/snapshot-access.js";
import { DEFAULT_LIVENESS } from "../../src/runtime/sessions/snapshot-liveness.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { capturingLogger, commandLog, freshPrefix } from "./mongodb-fixtures.js";
import {
  checkpointRecord,
  commitOf,
  commitRecord,
  eventually,
  pendingRecord,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

// What the driver sends on behalf of the store, seen through command monitoring. The server is
// mongo-java-server presenting itself as the primary of a replica set (replicaSet=rs0, no direct
// connection), so the driver applies replica-set rules: a read that may go to a secondary carries
// $readPreference; a primary read carries none.
const DATABASE = "agentd_wire";
const WRITES = ["insert", "update", "delete", "findAndModify"];
const READS = ["find", "aggregate", "count", "distinct"];

let server: MongoJavaServer;
beforeAll(async () => {
  server = await MongoJavaServer.start(0, { replicaSet: "rs0" });
}, 300_000);
afterAll(async () => {
  await server?.stop();
});

type Store = MongoSessionStore<CounterState>;

function monitoredStore(
  prefix = freshPrefix(),
  uri = server.uri,
  extra: Partial<ConstructorParameters<typeof MongoSessionStore>[0]> = {},
): Store {
  return new MongoSessionStore<CounterState>({
    uri,
    database: DATABASE,
    collectionPrefix: prefix,
    clientOptions: { monitorCommands: true },
    ...extra,
  });
}

function describeCommand(e: CommandStartedEvent): string {
  return `${e.commandName} ${JSON.stringify({ writeConcern: e.command.writeConcern, readConcern: e.command.readConcern, $readPreference: e.command.$readPreference })}`;
}

/** Every ledger operation once: commits (new session, delta, pending, a losing commit), reads, listing, updates, a subscription. */
async function fullWorkload(store: Store, other: Store): Promise<void> {
  let head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
  const delta: CounterRecord = {
    ...pendingRecord("s1", "d1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }),
    status: "completed",
    delta: { keepMessages: 0, appendMessages: [], customPatch: [{ op: "replace", path: "/n", value: 1 }] },
    depth: 1,
    deltaBytes: 10,
    checkpointTurn: 0,
  };
  head = await commitRecord(store, head, delta);
  head = await commitRecord(
    store,
    head,
    pendingRecord("s1", "bg", { parentId: "d1", turnIndex: 2, createdAt: T0 + 2 }),
  );
  // A losing commit: its record is inserted, the head CAS fails, the record is deleted again.
  expect(
    await store.commit(
      commitOf({ ...head, version: head.version - 1 }, pendingRecord("s1", "loser", { createdAt: T0 + 3 })),
    ),
  ).toBeUndefined();
  await store.getHead("s1");
  await store.getRecord("d1");
  await store.getChain("d1");
  await store.listRecords("s1");
  await store.listRecords("s1", { includeState: false });
  const watch = recordStatuses(store, "bg");
  await eventually(() => watch.seen.length === 1 && store.changeStreamOpen);
  await other.updateRecord("bg", (e) => ({ ...e, heartbeatAt: T0 + 5 }));
  await store.updateRecord("bg", (e) => ({ ...e, status: "aborted", finishReason: "aborted" }));
  await eventually(() => watch.seen.length === 2);
  await watch.stop();
  await store.ping();
  // The session lifecycle: a listing, an expired session swept (with the orphan pass), a delete.
  const expiring = commitOf(undefined, checkpointRecord("s2", "s2-root"));
  await store.commit({ ...expiring, head: { ...expiring.head, ttlMs: 10, labels: { env: "test" } } });
  await store.listHeads({ owner: "", labels: { env: "test" }, now: T0 });
  expect(await store.sweepExpired(T0 + 10)).toBe(1);
  expect(await store.deleteSession("s1")).toBe(true);
}

describe("mongodb store: what the driver sends", () => {
  it("sends every write with w: majority, journaled, and every read with read concern majority to the primary", async () => {
    const store = monitoredStore();
    const other = new MongoSessionStore<CounterState>({
      uri: server.uri,
      database: DATABASE,
      collectionPrefix: "unused_",
    });
    const log = commandLog(store);
    await fullWorkload(store, other);
    const names = new Set(log.started.map((e) => e.commandName));
    // The workload covers every kind of command the store sends.
    for (const name of [
      "insert",
      "update",
      "delete",
      "findAndModify",
      "find",
      "aggregate",
      "distinct",
      "getMore",
      "createIndexes",
      "listIndexes",
    ]) {
      expect(names).toContain(name);
    }
    expect(store.warnings).toEqual([]);
    for (const e of log.named(...WRITES, "createIndexes")) {
      expect(describeCommand(e)).toBe(
        `${e.commandName} ${JSON.stringify({ writeConcern: { w: "majority", wtimeout: 10_000, j: true } })}`,
      );
    }
    for (const e of log.named(...READS)) {
      expect(describeCommand(e)).toBe(`${e.commandName} ${JSON.stringify({ readConcern: { level: "majority" } })}`);
    }
    // A primary read carries no $readPreference (the driver adds one for any other mode); nothing is allowed on a secondary.
    expect(log.started.filter((e) => e.command.$readPreference !== undefined).map(describeCommand)).toEqual([]);
    await store.close();
    await other.close();
  });

  it("weakens write concern and read concern only as the URI says, keeps reads on the primary, and warns at start", async () => {
    const uri = `${server.uri}&w=1&journal=false&readConcernLevel=local&readPreference=secondaryPreferred`;
    const logger = capturingLogger();
    const store = monitoredStore(freshPrefix(), uri, { logger });
    expect(store.warnings).toHaveLength(4);
    for (const setting of ["w=1", "journal=false", "readConcernLevel=local", "readPreference=secondaryPreferred"]) {
      expect(store.warnings.some((w) => w.includes(setting) && w.includes("remove"))).toBe(true);
    }
    // Logged at construction, before the first operation.
    expect(logger.lines.map((l) => l.message)).toEqual(store.warnings);
    const log = commandLog(store);
    await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await store.getRecord("root");
    for (const e of log.named(...WRITES)) expect(e.command.writeConcern).toEqual({ w: 1, j: false, wtimeout: 10_000 });
    const reads = log.named("find");
    expect(reads.length).toBeGreaterThan(0);
    for (const e of reads) {
      expect(e.command.readConcern).toEqual({ level: "local" });
      expect(e.command.$readPreference).toBeUndefined(); // primary: the URI's secondaryPreferred is overridden
    }
    await store.close();
  });

  it("refuses unacknowledged writes (w=0) at construction with INVALID_ARGUMENT", () => {
    expect(() => new MongoSessionStore({ uri: `${server.uri}&w=0` })).toThrow(
      expect.objectContaining({ status: "INVALID_ARGUMENT", message: expect.stringMatching(/w=0/) }),
    );
  });

  it("lists without state when the caller does not need it (ListSnapshots without include_state)", async () => {
    const store = monitoredStore();
    const log = commandLog(store);
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await commitRecord(store, head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }));
    const target = { name: "counter", store, liveness: DEFAULT_LIVENESS, transforms: {} };
    log.clear();
    const bare = await listSnapshots(target, "s1", { includeState: false });
    const listing = log.named("find").filter((e) => e.command.sort !== undefined);
    expect(listing.map((e) => e.command.projection)).toEqual([{ state: 0 }]);
    expect(bare.snapshots.map((s) => [s.snapshotId, s.state])).toEqual([
      ["bg", undefined],
      ["root", undefined],
    ]);
    expect(
      (await store.listRecords("s1", { includeState: false })).records.map((r) => [r.checkpoint, r.delta]),
    ).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
    log.clear();
    const full = await listSnapshots(target, "s1", { includeState: true });
    expect(
      log
        .named("find")
        .filter((e) => e.command.sort !== undefined)
        .map((e) => e.command.projection),
    ).toEqual([undefined]);
    expect(full.snapshots.find((s) => s.snapshotId === "root")?.state).toEqual({
      sessionId: "s1",
      messages: [],
      artifacts: [],
      custom: { n: 0 },
    });
    await store.close();
  });
});

describe("mongodb store: bounded reads", () => {
  /** A delta record `id` on `parentId` at `turnIndex`, whose delta holds `bytes` of text. */
  const deltaOf = (id: string, parentId: string, turnIndex: number, depth: number, bytes: number): CounterRecord => ({
    ...pendingRecord("s1", id, { parentId, turnIndex, createdAt: T0 + turnIndex }),
    status: "completed",
    delta: {
      keepMessages: 0,
      appendMessages: [],
      customPatch: [{ op: "replace", path: "/n", value: "x".repeat(bytes) }],
    },
    depth,
    deltaBytes: bytes,
    checkpointTurn: 0,
  });

  it("reads a chain without moving the state of the session's other branches in its turn range", async () => {
    const store = monitoredStore();
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    // 20 abandoned branches off the root, 100 KB of state each, then the 2-turn chain read (a few bytes of state).
    for (let b = 0; b < 20; b++) head = await commitRecord(store, head, deltaOf(`branch${b}`, "root", 1, 1, 100_000));
    head = await commitRecord(store, head, deltaOf("c1", "root", 1, 1, 10));
    await commitRecord(store, head, deltaOf("c2", "c1", 2, 2, 10));
    const log = commandLog(store);
    const chain = await store.getChain("c2");
    expect(chain?.map((r) => r.snapshotId)).toEqual(["root", "c1", "c2"]);
    const moved = log.succeeded
      .filter((e) => e.commandName === "find")
      .reduce((sum, e) => sum + JSON.stringify(e.reply).length, 0);
    expect(moved).toBeLessThan(20_000); // the branches' 2 MB of state stay on the server
    await store.close();
  });

  it("ends a listing page with state early once its state reaches the byte budget, and pages on to the rest", async () => {
    const store = monitoredStore(freshPrefix(), server.uri, { listPageStateBytes: 250_000 });
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    for (let t = 1; t <= 5; t++)
      head = await commitRecord(store, head, deltaOf(`d${t}`, t === 1 ? "root" : `d${t - 1}`, t, t, 100_000));
    const pages: string[][] = [];
    for (let token: string | undefined, first = true; first || token; first = false) {
      const page = await store.listRecords("s1", { pageSize: 50, ...(token ? { pageToken: token } : {}) });
      pages.push(page.records.map((r) => r.snapshotId));
      token = page.nextPageToken;
    }
    expect(pages).toEqual([
      ["d5", "d4", "d3"],
      ["d2", "d1", "root"],
    ]);
    await store.close();
  });

  it("bounds a deep page's query by the last page's position (keyset range, no scan from the start)", async () => {
    const store = monitoredStore();
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    for (let t = 1; t <= 5; t++)
      head = await commitRecord(store, head, deltaOf(`d${t}`, t === 1 ? "root" : `d${t - 1}`, t, t, 10));
    const first = await store.listRecords("s1", { pageSize: 2, includeState: false });
    const log = commandLog(store);
    const second = await store.listRecords("s1", { pageSize: 2, includeState: false, pageToken: first.nextPageToken! });
    expect(second.records.map((r) => r.snapshotId)).toEqual(["d3", "d2"]);
    const query = log.named("find").find((e) => e.command.sort !== undefined)!;
    expect(query.command.filter).toMatchObject({ sessionId: "s1", createdAt: { $lte: T0 + 4 } });
    await store.close();
  });
});

describe("mongodb store: record documents", () => {
  it("keeps the state apart from the metadata, and still reads documents that hold the whole record in body", async () => {
    const prefix = freshPrefix();
    const store = monitoredStore(prefix);
    const raw = new MongoClient(server.uri);
    const records = raw.db(DATABASE).collection(`${prefix}snapshots`);
    await commitRecord(store, undefined, checkpointRecord("s1", "new"));
    const written = await records.findOne({ _id: "new" as never });
    expect(written!.body).toBeUndefined();
    expect(written!.meta).not.toHaveProperty("checkpoint");
    expect(JSON.parse((written!.meta as Record<string, string>).snapshotId!)).toBe("new");
    expect(JSON.parse(written!.state as string)).toEqual({
      checkpoint: { sessionId: "s1", messages: [], artifacts: [], custom: { n: 0 } },
    });
    // A document as the first ledger release wrote it: the whole record in body, no state field.
    const old = checkpointRecord("s2", "old", {
      checkpoint: { sessionId: "s2", messages: [], artifacts: [], custom: { n: 5 } },
    });
    const { checkpoint: _checkpoint, ...oldMeta } = old;
    await records.insertOne({
      _id: "old" as never,
      snapshotId: "old",
      version: 1,
      sessionId: "s2",
      createdAt: T0,
      turnIndex: 0,
      status: "completed",
      parentId: null,
      body: JSON.stringify(old),
      checkpointChunks: null,
    });
    expect(await store.getRecord("old")).toEqual(old);
    expect(await store.getChain("old")).toEqual([old]);
    expect((await store.listRecords("s2")).records).toEqual([old]);
    expect((await store.listRecords("s2", { includeState: false })).records).toEqual([oldMeta]);
    // Its first update moves it to the new layout.
    await store.updateRecord("old", (e) => ({ ...e, status: "failed" }));
    const moved = await records.findOne({ _id: "old" as never });
    expect([moved!.body, moved!.meta?.checkpoint, typeof moved!.state]).toEqual([undefined, undefined, "string"]);
    expect(await store.getRecord("old")).toEqual({ ...old, status: "failed" });
    await Promise.all([store.close(), raw.close()]);
  });
});

describe("mongodb store: URI options", () => {
  it("never takes the URI's database as the authentication database; authSource in the URI wins", async () => {
    const plain = new MongoSessionStore({ uri: "mongodb://user:secret@127.0.0.1:1/tenantdb" });
    expect(plain.databaseName).toBe("tenantdb");
    expect(plain.driverClient.options.credentials?.source).toBe("admin");
    const explicit = new MongoSessionStore({ uri: "mongodb://user:secret@127.0.0.1:1/tenantdb?authSource=users" });
    expect(explicit.driverClient.options.credentials?.source).toBe("users");
    const fromCli = (await openStoreFromUri(
      "mongodb://user:secret@127.0.0.1:1/tenantdb?collectionPrefix=acme_",
    )) as MongoSessionStore;
    expect([fromCli.databaseName, fromCli.driverClient.options.credentials?.source]).toEqual(["tenantdb", "admin"]);
    await Promise.all([plain.close(), explicit.close(), fromCli.close()]);
  });

  it("honours the URI's driver options over the store's defaults (timeouts, pool, server selection)", async () => {
    const uri =
      "mongodb://127.0.0.1:1/agentd?serverSelectionTimeoutMS=700&connectTimeoutMS=1234&maxPoolSize=7&socketTimeoutMS=4321";
    const store = new MongoSessionStore({ uri });
    const o = store.driverClient.options;
    expect([o.serverSelectionTimeoutMS, o.connectTimeoutMS, o.maxPoolSize, o.socketTimeoutMS]).toEqual([
      700, 1234, 7, 4321,
    ]);
    expect(
      new MongoSessionStore({ uri: "mongodb://127.0.0.1:1/agentd" }).driverClient.options.serverSelectionTimeoutMS,
    ).toBe(10_000);
    await store.close();
  });
});

describe("mongodb store: indexes", () => {
  it("uses an equivalent index created under another name instead of failing", async () => {
    const prefix = freshPrefix();
    const raw = new MongoClient(server.uri);
    await raw
      .db(DATABASE)
      .collection(`${prefix}snapshots`)
      .createIndex({ sessionId: 1, turnIndex: 1 }, { name: "ops_session_turn" });
    const store = monitoredStore(prefix);
    const log = commandLog(store);
    await store.ready();
    await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    const created = log
      .named("createIndexes")
      .flatMap((e) => (e.command.indexes as { name: string }[]).map((i) => i.name));
    expect(created).toEqual([
      "session_latest",
      "chunk_set",
      "chunk_session",
      "owner_updated",
      "expire_at_ttl",
      "lease_expires_id",
      "log_sequence",
      "expire_at_ttl",
      "log_session",
      "tool_call_session",
      "expire_at_ttl",
    ]);
    const names = (await raw.db(DATABASE).collection(`${prefix}snapshots`).indexes()).map((i) => i.name).sort();
    expect(names).toEqual(["_id_", "ops_session_turn", "session_latest"]);
    // A second instance opening the same collections creates nothing.
    const again = monitoredStore(prefix);
    const againLog = commandLog(again);
    await again.ready();
    expect(againLog.named("createIndexes")).toEqual([]);
    await Promise.all([store.close(), again.close(), raw.close()]);
  });

  it("fails FAILED_PRECONDITION, naming the index, when an index it cannot use has its keys or its name", async () => {
    const raw = new MongoClient(server.uri);
    const uniquePrefix = freshPrefix();
    await raw
      .db(DATABASE)
      .collection(`${uniquePrefix}snapshots`)
      .createIndex({ sessionId: 1, turnIndex: 1 }, { name: "uniq", unique: true });
    const unique = monitoredStore(uniquePrefix);
    await expect(unique.ready()).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringMatching(/"uniq".*unique/),
    });
    const takenPrefix = freshPrefix();
    await raw.db(DATABASE).collection(`${takenPrefix}snapshots`).createIndex({ other: 1 }, { name: "session_turn" });
    const taken = monitoredStore(takenPrefix);
    await expect(taken.ready()).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringMatching(/named "session_turn" on other keys/),
    });
    await Promise.all([unique.close(), taken.close(), raw.close()]);
  });
});

describe("mongodb store: what an index conflict tells the user", () => {
  it("names every restricting option of an index it cannot use, says what to do, and names collection and index in the details", async () => {
    const raw = new MongoClient(server.uri);
    const prefix = freshPrefix();
    await raw
      .db(DATABASE)
      .collection(`${prefix}snapshots`)
      .createIndex({ sessionId: 1, turnIndex: 1 }, { name: "uniq", unique: true, sparse: true });
    const store = monitoredStore(prefix);
    await expect(store.ready()).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message:
        `MongoDB collection "${prefix}snapshots" has an index "uniq" on {"sessionId":1,"turnIndex":1} with unique, sparse; ` +
        `agentd needs a plain index on these keys. Drop that index (agentd then creates "session_turn") or point agentd at ` +
        `another collectionPrefix.`,
      details: { collection: `${prefix}snapshots`, index: "uniq" },
    });
    await Promise.all([store.close(), raw.close()]);
  });

  it("says to drop or rename an index that holds its index's name, names it in the details and keeps the server's error as cause", async () => {
    const raw = new MongoClient(server.uri);
    const prefix = freshPrefix();
    await raw.db(DATABASE).collection(`${prefix}snapshots`).createIndex({ other: 1 }, { name: "session_turn" });
    const store = monitoredStore(prefix);
    await expect(store.ready()).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message:
        `MongoDB collection "${prefix}snapshots" has an index named "session_turn" on other keys than ` +
        `{"sessionId":1,"turnIndex":1}; drop or rename it so agentd can create its index.`,
      details: { collection: `${prefix}snapshots`, index: "session_turn" },
      cause: expect.objectContaining({ code: 86 }),
    });
    await Promise.all([store.close(), raw.close()]);
  });

  it("creates its plain (non-TTL) indexes without an expireAfterSeconds setting", async () => {
    const raw = new MongoClient(server.uri);
    const prefix = freshPrefix();
    const store = monitoredStore(prefix);
    await store.ready();
    const indexes = await raw.db(DATABASE).collection(`${prefix}snapshots`).listIndexes().toArray();
    expect(indexes.map((i) => i.name).sort()).toEqual(["_id_", "session_latest", "session_turn"]);
    expect(indexes.filter((i) => "expireAfterSeconds" in i)).toEqual([]);
    await Promise.all([store.close(), raw.close()]);
  });
});

describe("mongodb store: an operator's indexes and clients", () => {
  it("uses an operator's index that sets unique: false as the plain index it is", async () => {
    const prefix = freshPrefix();
    const raw = new MongoClient(server.uri);
    await raw
      .db(DATABASE)
      .collection(`${prefix}snapshots`)
      .createIndex({ sessionId: 1, turnIndex: 1 }, { name: "ops_session_turn", unique: false, sparse: false });
    const store = monitoredStore(prefix);
    await store.ready();
    const names = (await raw.db(DATABASE).collection(`${prefix}snapshots`).indexes()).map((i) => i.name).sort();
    expect(names).toEqual(["_id_", "ops_session_turn", "session_latest"]);
    await Promise.all([store.close(), raw.close()]);
  });

  it("leaves a client it was given open when it closes", async () => {
    const client = new MongoClient(server.uri);
    const store = new MongoSessionStore<CounterState>({ client, database: DATABASE, collectionPrefix: freshPrefix() });
    await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await store.close();
    await expect(client.db(DATABASE).command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    expect(client.listenerCount("connectionReady")).toBe(0);
    await client.close();
  });

  it("names its collections heads, snapshots, checkpoint_chunks, stream_chunks, tool_calls and store_meta without a collectionPrefix", async () => {
    const database = `agentd_wire_${freshPrefix()}`;
    const store = new MongoSessionStore<CounterState>({ uri: server.uri, database });
    await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    const raw = new MongoClient(server.uri);
    const names = (await raw.db(database).listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
    expect(names).toEqual(["checkpoint_chunks", "heads", "snapshots", "store_meta", "stream_chunks", "tool_calls"]);
    await raw.db(database).dropDatabase();
    await Promise.all([store.close(), raw.close()]);
  });
});

describe("mongodb store on a deployment without change streams", () => {
  let standalone: MongoJavaServer;
  beforeAll(async () => {
    standalone = await MongoJavaServer.start(0, { changeStreams: false });
  }, 300_000);
  afterAll(async () => {
    await standalone?.stop();
  });

  it("fails at open with FAILED_PRECONDITION saying a replica set is needed (the server's error 40573)", async () => {
    const store = new MongoSessionStore<CounterState>({
      uri: standalone.uri,
      database: DATABASE,
      collectionPrefix: freshPrefix(),
    });
    const failure = await store.ready().then(
      () => undefined,
      (err: unknown) => err as Error & { status?: string },
    );
    expect(failure?.status).toBe("FAILED_PRECONDITION");
    expect(failure?.message).toMatch(
      /cannot run change streams \(The \$changeStream stage is only supported on replica sets\)/,
    );
    expect(failure?.message).toMatch(/--replSet rs0.*rs\.initiate\(\).*replicaSet=rs0/);
    expect((failure?.cause as { code?: number; name?: string }) ?? {}).toMatchObject({
      code: 40573,
      name: "MongoServerError",
    });
    // Every operation fails the same way (not a silent loop every second).
    await expect(store.commit(commitOf(undefined, checkpointRecord("s1", "root")))).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
    });
    await store.close();
  });

  it("logs the first of a row of failed attempts to open the status stream, and retries the others silently", async () => {
    const logger = capturingLogger();
    const store = new MongoSessionStore<CounterState>({
      uri: standalone.uri,
      database: DATABASE,
      collectionPrefix: freshPrefix(),
      logger,
    });
    const subscription = new AbortController();
    store.subscribeStatus("s1", subscription.signal);
    await eventually(() => store.changeStreamLastEnding !== undefined);
    const first = store.changeStreamLastEnding!;
    expect(first.reason).toMatch(/cannot run change streams/);
    await eventually(() => store.changeStreamLastEnding!.at > first.at);
    expect(logger.lines.map((l) => l.message)).toEqual(["MongoDB change stream could not be opened; retrying"]);
    expect(store.changeStreamReopens).toBe(0);
    subscription.abort();
    await store.close();
  });
});
