import { randomBytes } from "node:crypto";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import { DEFAULT_CHECKPOINT_POLICY } from "../../stores/ledger/checkpoint-policy.js";
import { stateOfChain } from "../../stores/ledger/state-chain.js";
import {
  CHUNK_BYTES,
  CheckpointChunks,
  splitCheckpoint,
  type ChunkDocument,
} from "../../stores/mongodb/checkpoint-chunks.js";
import { MongoSessionStore, type MongoSessionStoreConfig } from "../../stores/mongodb/mongo-store.js";
import { mongoForTests, type MongoJavaServer } from "../harness/mongo-java-server.js";
import { ResettingProxy } from "../harness/resetting-proxy.js";
import { chunks } from "./chunk-factory.js";
import { runStoreConformance } from "./conformance.js";
import { frozenMessage, RuntimeSession } from "./ledger-fixtures.js";
import {
  checkpointRecord,
  commitOf,
  commitRecord,
  eventually,
  pendingRecord,
  sleep,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

const DATABASE = "agentd_test";
let mongo: Awaited<ReturnType<typeof mongoForTests>>;
let raw: MongoClient;
let db: Db;
// The first run builds the launcher with Maven (downloads mongo-java-server): allow for it.
beforeAll(async () => {
  mongo = await mongoForTests();
  raw = new MongoClient(mongo.uri);
  db = raw.db(DATABASE);
}, 300_000);
afterAll(async () => {
  await raw?.close();
  await mongo?.stop();
});

type Store = MongoSessionStore<CounterState>;

/** A checkpoint over 8 MiB, so it is stored in chunk documents. */
function bigCheckpoint(sessionId: string, snapshotId: string): CounterRecord {
  return checkpointRecord(sessionId, snapshotId, {
    checkpoint: { sessionId, messages: [userText("x".repeat(9 * 1024 * 1024))], artifacts: [], custom: { n: 0 } },
  });
}
const prefixes = new WeakMap<Store, string>();

/** A store on a fresh collection prefix, so tests never see each other's data. */
function freshStore(
  prefix = `t${randomBytes(5).toString("hex")}_`,
  config: Partial<MongoSessionStoreConfig> = {},
): Store {
  const store = new MongoSessionStore<CounterState>({
    ...config,
    uri: mongo.uri,
    database: DATABASE,
    collectionPrefix: prefix,
  });
  prefixes.set(store, prefix);
  return store;
}

/**
 * A fresh store whose client holds one connection, so a write another writer sends from inside
 * the store's work (a mutator, a driver command event) is queued before the store's next command:
 * how the race tests put another writer between two steps of the store without sleeping.
 */
function oneConnectionStore(config: Partial<MongoSessionStoreConfig> = {}): { store: Store; prefix: string } {
  const store = freshStore(undefined, { ...config, clientOptions: { ...config.clientOptions, maxPoolSize: 1 } });
  return { store, prefix: prefixes.get(store)! };
}

/** A second store instance (own client) on the same collections as `store`: its writes reach `store` only via MongoDB. */
function sameCollections(store: Store): Store {
  return freshStore(prefixes.get(store)!);
}

/** Documents per collection of the store's prefix (every collection, whatever it holds). */
async function documentCounts(prefix: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
    // store_meta's orphan-pass position (written by the first sweep) is bookkeeping, not session data.
    const filter = name === `${prefix}store_meta` ? { _id: { $ne: "orphan_scan" as never } } : {};
    if (name.startsWith(prefix)) counts[name.slice(prefix.length)] = await db.collection(name).countDocuments(filter);
  }
  return counts;
}

runStoreConformance(
  "mongodb",
  async () => {
    const store = freshStore();
    return {
      store,
      openResources: () => (store.changeStreamOpen ? 1 : 0) + store.chunkWatcherCount,
      watchersSettled: () => store.chunkStreamsOpen === store.chunkWatcherCount,
      footprint: () => documentCounts(prefixes.get(store)!),
      crossProcess: { kind: "mongodb", uri: mongo.uri, database: DATABASE, collectionPrefix: prefixes.get(store)! },
    };
  },
  { sharedAcrossProcesses: true, keepsToolJournal: true },
);

describe("mongodb store: documents and limits", () => {
  it(
    "splits a checkpoint over 16 MiB across chunk documents and reads it back whole",
    { timeout: 60_000 },
    async () => {
      const store = freshStore();
      const prefix = prefixes.get(store)!;
      const mib = "m".repeat(1024 * 1024 - 16);
      const messages = Array.from({ length: 20 }, (_, i) => userText(`${String(i).padStart(2, "0")}${mib}`));
      const record = checkpointRecord("s1", "huge", {
        checkpoint: { sessionId: "s1", messages, artifacts: [], custom: { n: 7 } },
      });
      const expected = structuredClone(record);
      const head = await commitRecord(store, undefined, record);
      const doc = await db.collection(`${prefix}snapshots`).findOne({ _id: "huge" as never });
      expect(doc!.checkpointChunks).toMatchObject({ count: 3 });
      expect(await db.collection(`${prefix}checkpoint_chunks`).countDocuments({ set: doc!.checkpointChunks.set })).toBe(
        3,
      );
      expect(await store.getRecord("huge")).toEqual(expected);
      expect(await store.getChain("huge")).toEqual([expected]);
      expect((await store.listRecords("s1")).records).toEqual([expected]);
      // A delta on top of it: the chain's range query fetches it, only the checkpoint's chunks are joined.
      const next = { ...record.checkpoint!, messages: [...messages, userText("after")] };
      const delta: CounterRecord = {
        ...pendingRecord("s1", "after", { parentId: "huge", turnIndex: 1, createdAt: T0 + 1 }),
        status: "completed",
        delta: { keepMessages: 20, appendMessages: [userText("after")] },
        depth: 1,
        deltaBytes: 40,
        checkpointTurn: 0,
      };
      await commitRecord(store, head, delta);
      expect(stateOfChain((await store.getChain("after"))!)).toEqual(next);
      // A status change keeps the chunks (the checkpoint is unchanged), so nothing is rewritten or orphaned.
      await store.updateRecord("huge", (e) => ({ ...e, status: "failed" }));
      expect(await db.collection(`${prefix}checkpoint_chunks`).countDocuments()).toBe(3);
      expect(await store.getRecord("huge")).toEqual({ ...expected, status: "failed" });
      await store.close();
    },
  );

  it(
    "rejects a record whose delta cannot fit one document with RESOURCE_EXHAUSTED and writes nothing",
    { timeout: 60_000 },
    async () => {
      const store = freshStore();
      const prefix = prefixes.get(store)!;
      const root = checkpointRecord("s1", "root");
      const head = await commitRecord(store, undefined, root);
      const mib = "d".repeat(1024 * 1024);
      const appendMessages = Array.from({ length: 17 }, () => userText(mib));
      const big: CounterRecord = {
        ...pendingRecord("s1", "big", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }),
        status: "completed",
        delta: { keepMessages: 0, appendMessages },
        depth: 1,
        deltaBytes: 17 * 1024 * 1024,
      };
      const attempt = store.commit(commitOf(head, big));
      await expect(attempt).rejects.toMatchObject({
        status: "RESOURCE_EXHAUSTED",
        message: expect.stringMatching(/16 MiB document limit; nothing was written/),
      });
      expect(await store.getHead("s1")).toEqual(head);
      expect(await store.getRecord("big")).toBeUndefined();
      expect(await db.collection(`${prefix}snapshots`).countDocuments()).toBe(1);
      expect(await db.collection(`${prefix}checkpoint_chunks`).countDocuments()).toBe(0);
      await store.close();
    },
  );

  it(
    "rejects an update that cannot fit one document with RESOURCE_EXHAUSTED and leaves the stored record unchanged",
    { timeout: 60_000 },
    async () => {
      const store = freshStore();
      const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      await commitRecord(store, head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }));
      const pending = await store.getRecord("bg");
      const mib = "d".repeat(1024 * 1024);
      await expect(
        store.updateRecord("bg", (e) => ({
          ...e,
          status: "completed",
          delta: { keepMessages: 0, appendMessages: Array.from({ length: 17 }, () => userText(mib)) },
          depth: 1,
          deltaBytes: 17 * 1024 * 1024,
        })),
      ).rejects.toMatchObject({
        status: "RESOURCE_EXHAUSTED",
        message: expect.stringMatching(/16 MiB document limit; the stored record is unchanged\./),
      });
      expect(await store.getRecord("bg")).toEqual(pending);
      await store.close();
    },
  );

  it(
    "removes the chunks an update wrote when it lost the race to another writer, keeping only the stored checkpoint's",
    { timeout: 60_000 },
    async () => {
      // One connection: the other writer's update is queued before the store's chunk inserts and conditional write.
      const { store, prefix } = oneConnectionStore();
      const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      await commitRecord(store, head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }));
      const records = store.driverClient.db(DATABASE).collection<{ _id: string }>(`${prefix}snapshots`);
      let otherWrite: Promise<unknown> | undefined;
      const stored = await store.updateRecord("bg", (e) => {
        // Another instance's write lands between the first read and the store's conditional write.
        otherWrite ??= records.updateOne({ _id: "bg" }, { $inc: { version: 1 } });
        return { ...bigCheckpoint("s1", "bg"), parentId: e.parentId, turnIndex: e.turnIndex, createdAt: e.createdAt };
      });
      await otherWrite;
      expect(stored?.checkpoint).toBeDefined();
      const doc = await db.collection(`${prefix}snapshots`).findOne({ _id: "bg" as never });
      const chunks = db.collection(`${prefix}checkpoint_chunks`);
      expect(await chunks.countDocuments()).toBe(2);
      expect(await chunks.countDocuments({ set: doc!.checkpointChunks.set })).toBe(2);
      expect(await store.getRecord("bg")).toEqual(stored);
      await store.close();
    },
  );

  it("gives up with ABORTED after maxConflictRetries lost races against other writers", async () => {
    // One connection: the other writer's update is queued before the store's conditional write.
    const { store, prefix } = oneConnectionStore({ maxConflictRetries: 2 });
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await commitRecord(store, head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }));
    const records = store.driverClient.db(DATABASE).collection<{ _id: string }>(`${prefix}snapshots`);
    const otherWrites: Promise<unknown>[] = [];
    const failed = store.updateRecord("bg", (e) => {
      if (otherWrites.length > 5) return null; // never giving up: stop here so the assertion fails
      // Another instance's write lands between this read and the store's conditional write.
      otherWrites.push(records.updateOne({ _id: "bg" }, { $inc: { version: 1 } }));
      return { ...e, status: "failed" };
    });
    await expect(failed).rejects.toMatchObject({
      status: "ABORTED",
      message: "snapshot bg: gave up after 2 concurrent-write conflicts; retry the request",
    });
    expect(otherWrites).toHaveLength(3);
    await Promise.all(otherWrites);
    expect(await store.getRecord("bg")).toMatchObject({ status: "pending" });
    await store.close();
  });

  it(
    "fails DATA_LOSS, naming the snapshot, when a checkpoint's chunks are gone for good",
    { timeout: 60_000 },
    async () => {
      const store = freshStore();
      const prefix = prefixes.get(store)!;
      await commitRecord(store, undefined, checkpointRecord("small", "small-root"));
      await commitRecord(store, undefined, bigCheckpoint("big", "big-root"));
      await db.collection(`${prefix}checkpoint_chunks`).deleteMany({});
      await expect(store.getRecord("big-root")).rejects.toMatchObject({
        status: "DATA_LOSS",
        message:
          'snapshot "big-root" cannot be read: the chunk documents of its checkpoint are missing or incomplete (restore the store from a backup)',
      });
      expect(await store.getRecord("small-root")).toMatchObject({ snapshotId: "small-root" });
      await store.close();
    },
  );

  it(
    "reads a snapshot deleted while its checkpoint's chunks were being read as absent",
    { timeout: 60_000 },
    async () => {
      // One connection: the deletes below are queued before the reader's next command.
      const { store, prefix } = oneConnectionStore({ clientOptions: { monitorCommands: true } });
      await commitRecord(store, undefined, bigCheckpoint("big", "big-root"));
      const own = store.driverClient.db(DATABASE);
      let deletion: Promise<unknown> | undefined;
      store.driverClient.on("commandSucceeded", (event) => {
        const ns = (event.reply as { cursor?: { ns?: string } }).cursor?.ns;
        // What a concurrent deleteSession does once the reader has the record: the records, then the chunks.
        if (deletion === undefined && event.commandName === "find" && ns === `${DATABASE}.${prefix}snapshots`)
          deletion = Promise.all([
            own.collection(`${prefix}snapshots`).deleteMany({ sessionId: "big" }),
            own.collection(`${prefix}checkpoint_chunks`).deleteMany({ sessionId: "big" }),
          ]);
      });
      expect(await store.getRecord("big-root")).toBeUndefined();
      expect(deletion).toBeDefined();
      await deletion;
      await store.close();
    },
  );

  it("refuses to open format-1 data (the layout before the session ledger) with FAILED_PRECONDITION", async () => {
    const prefix = `t${randomBytes(5).toString("hex")}_`;
    const legacy = {
      snapshotId: "old",
      sessionId: "s1",
      turnIndex: 0,
      createdAt: T0,
      updatedAt: T0,
      status: "completed",
      state: { messages: [], artifacts: [] },
    };
    await db
      .collection(`${prefix}snapshots`)
      .insertOne({ _id: "old" as never, version: 1, sessionId: "s1", createdAt: T0, data: JSON.stringify(legacy) });
    const store = freshStore(prefix);
    const failure = store.getHead("s1");
    await expect(failure).rejects.toMatchObject({ status: "FAILED_PRECONDITION" });
    const message = ((await failure.catch((e: unknown) => e)) as Error).message;
    expect(message).toContain(`"${DATABASE}"`);
    expect(message).toContain(`"${prefix}snapshots"`);
    expect(message).toMatch(/store format 1; this agentd reads format 2/);
    expect(message).toMatch(/collectionPrefix/);
    expect(message).toContain("Format 1 is the layout of agentd releases before the session ledger");
    expect(message).toContain("the format-1 documents are left untouched");
    // Nothing was written into the old layout.
    expect(await db.collection(`${prefix}store_meta`).countDocuments()).toBe(0);
    await store.close();
  });

  it("refuses a store whose meta document names another format", async () => {
    const prefix = `t${randomBytes(5).toString("hex")}_`;
    await db.collection(`${prefix}store_meta`).insertOne({ _id: "format" as never, format: 3, createdAt: T0 });
    const store = freshStore(prefix);
    await expect(store.commit(commitOf(undefined, checkpointRecord("s1", "a")))).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringMatching(
        /store format 3; this agentd reads format 2\. Use the agentd release that wrote format 3 \(see "t[0-9a-f]+_store_meta"\)/,
      ),
      details: { database: DATABASE, collection: `${prefix}snapshots`, foundFormat: 3, expectedFormat: 2 },
    });
    await store.close();
  });

  it("records format 2 in the meta document of a new store on first use", async () => {
    const prefix = `t${randomBytes(5).toString("hex")}_`;
    const store = freshStore(prefix);
    await commitRecord(store, undefined, checkpointRecord("s1", "a"));
    expect(await db.collection(`${prefix}store_meta`).find().toArray()).toEqual([
      { _id: "format", format: 2, createdAt: expect.any(Number) },
    ]);
    await store.close();
  });
});

describe("mongodb store: checkpoint chunk documents", () => {
  it(
    "joins a checkpoint's chunks in sequence order, whatever order they were stored in",
    { timeout: 60_000 },
    async () => {
      const chunks = new CheckpointChunks(
        db.collection<ChunkDocument>(`t${randomBytes(5).toString("hex")}_checkpoint_chunks`),
      );
      const json = JSON.stringify({ first: "a".repeat(CHUNK_BYTES), then: "b".repeat(1024) });
      const split = splitCheckpoint(json, "s1");
      expect(split.ref.count).toBe(2);
      await chunks.write({ ...split, documents: [...split.documents].reverse() });
      expect(await chunks.read(split.ref)).toBe(json);
    },
  );

  it("reads nothing when a set's chunks do not add up to the count and size its record names", async () => {
    const chunks = new CheckpointChunks(
      db.collection<ChunkDocument>(`t${randomBytes(5).toString("hex")}_checkpoint_chunks`),
    );
    const split = splitCheckpoint('{"n":1}', "s1");
    await chunks.write(split);
    expect(await chunks.read(split.ref)).toBe('{"n":1}');
    expect(await chunks.read({ ...split.ref, count: 2 })).toBeUndefined();
    expect(await chunks.read({ ...split.ref, bytes: split.ref.bytes + 1 })).toBeUndefined();
  });

  it("removes the chunks of one set and no other", async () => {
    const collection = db.collection<ChunkDocument>(`t${randomBytes(5).toString("hex")}_checkpoint_chunks`);
    const chunks = new CheckpointChunks(collection);
    const gone = splitCheckpoint('{"n":1}', "s1");
    const kept = splitCheckpoint('{"n":2}', "s1");
    await chunks.write(gone);
    await chunks.write(kept);
    await chunks.remove(gone.ref.set);
    expect(await chunks.read(gone.ref)).toBeUndefined();
    expect(await chunks.read(kept.ref)).toBe('{"n":2}');
    expect(await collection.countDocuments()).toBe(1);
    await expect(chunks.remove(gone.ref.set)).resolves.toBeUndefined();
  });
});

describe("mongodb store: status change stream", () => {
  it("delivers a status change written by another store instance through the change stream", async () => {
    const watcher = freshStore();
    const writer = sameCollections(watcher);
    await commitRecord(writer, undefined, pendingRecord("s1", "bg"));
    const { seen, stop } = recordStatuses(watcher, "bg");
    await eventually(() => seen.length === 1 && watcher.changeStreamOpen);
    await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
    // The subscription's own first read may land after the update on a loaded machine and deliver
    // "aborted" itself: wait for the change event too, which must come whichever path was first.
    await eventually(() => seen.length === 2 && watcher.changeEventsReceived === 1);
    await stop();
    expect(seen).toEqual(["pending", "aborted"]);
    expect(watcher.changeEventsReceived).toBe(1);
    await watcher.close();
    await writer.close();
  });

  it("serves every subscriber of a store instance from one change stream, closed when the last leaves", async () => {
    const watcher = freshStore();
    const writer = sameCollections(watcher);
    const ids = ["a", "b", "c"];
    let head = await commitRecord(writer, undefined, checkpointRecord("s1", "root"));
    for (const [i, id] of ids.entries()) {
      head = await commitRecord(
        writer,
        head,
        pendingRecord("s1", id, { parentId: "root", turnIndex: 1, createdAt: T0 + i + 1 }),
      );
    }
    const recorders = ids.map((id) => recordStatuses(watcher, id));
    const seen = recorders.map((r) => r.seen);
    await eventually(() => watcher.changeStreamOpen && seen.every((s) => s.length === 1));
    for (const id of ids) await writer.updateRecord(id, (e) => ({ ...e, status: "completed" }));
    await eventually(() => seen.every((s) => s.length === 2));
    // One stream: each status change arrived once, not once per subscriber.
    expect(watcher.changeEventsReceived).toBe(ids.length);
    await Promise.all([recorders[0]!.stop(), recorders[1]!.stop()]);
    await sleep(50);
    expect(watcher.changeStreamOpen).toBe(true);
    await recorders[2]!.stop();
    await eventually(() => !watcher.changeStreamOpen);
    expect(seen).toEqual(ids.map(() => ["pending", "completed"]));
    await watcher.close();
    await writer.close();
  });

  it(
    "receives status transitions only, not the turns other instances commit (200 turns)",
    // 200 sequential commits to the JVM server: seconds alone, minutes beside other files on 2 cores.
    { timeout: 240_000 },
    async () => {
      const TURNS = 200;
      const b = freshStore();
      const a = sameCollections(b);
      // B subscribes first (its change stream runs throughout) to the two rows A will create as pending.
      const p1 = recordStatuses(b, "p1");
      const p2 = recordStatuses(b, "p2");
      await eventually(() => b.changeStreamOpen);
      await sleep(100);
      const before = b.changeEventsReceived;
      const session = new RuntimeSession(a, "busy", DEFAULT_CHECKPOINT_POLICY);
      let state = session.state;
      // Any turn's commit on the stream would add one event per turn: 200 of them show as plainly as 1,000.
      for (let t = 0; t < TURNS; t++) {
        state = { ...state, messages: [...state.messages, frozenMessage(`turn ${t}`)], custom: { n: t } };
        await session.commit(`turn-${String(t).padStart(4, "0")}`, state);
      }
      // The status rows: pending (a detach), heartbeats (no status change), then the final status.
      const head = await commitRecord(
        a,
        session.head,
        pendingRecord("busy", "p1", { parentId: session.record!.snapshotId, turnIndex: TURNS }),
      );
      await commitRecord(
        a,
        head,
        pendingRecord("busy", "p2", { parentId: session.record!.snapshotId, turnIndex: TURNS }),
      );
      for (let i = 0; i < 5; i++) {
        await a.updateRecord("p1", (e) => ({ ...e, heartbeatAt: T0 + i }));
        await a.updateRecord("p2", (e) => ({ ...e, heartbeatAt: T0 + i }));
      }
      await a.updateRecord("p1", (e) => ({ ...e, status: "aborted", finishReason: "aborted" }));
      await a.updateRecord("p2", (e) => ({ ...e, status: "completed" }));
      await eventually(() => p1.seen.length === 2 && p2.seen.length === 2, 60_000);
      await sleep(300); // room for anything else the stream would still deliver
      await Promise.all([p1.stop(), p2.stop()]);
      expect(p1.seen).toEqual(["pending", "aborted"]);
      expect(p2.seen).toEqual(["pending", "completed"]);
      // Two pending inserts and two status updates; none of the turns or the 10 heartbeats.
      expect(b.changeEventsReceived - before).toBe(4);
      await a.close();
      await b.close();
    },
  );
});

describe("mongodb store across a server restart", () => {
  // mongo-java-server keeps data in memory, so a restart empties it: after the restart the
  // pending record is committed again (as the detached run's instance would still have it),
  // then another instance aborts it. The watcher's change stream must reopen and deliver the
  // abort. Against MONGODB_URI (nothing to restart) the same test checks delivery without it.
  it(
    "still delivers the next status change to an active subscriber after the server restarts",
    { timeout: 60_000 },
    async () => {
      const server: MongoJavaServer | undefined = mongo.server;
      const watcher = freshStore();
      const writer = sameCollections(watcher);
      await commitRecord(writer, undefined, pendingRecord("s1", "bg"));
      const { seen, stop } = recordStatuses(watcher, "bg");
      await eventually(() => seen.length === 1 && watcher.changeStreamOpen);
      if (server) {
        await server.restart();
        await eventually(() => watcher.changeStreamReopens >= 1, 30_000);
        await commitRecord(writer, undefined, pendingRecord("s1", "bg"));
      }
      await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => seen.length === 2, 30_000);
      await stop();
      expect(seen).toEqual(["pending", "aborted"]);
      await watcher.close();
      await writer.close();
    },
  );
});

describe("mongodb store: a database that became unreachable", () => {
  const proxy = new ResettingProxy();
  let store: Store;
  beforeAll(async () => {
    const target = mongo.server?.port ?? Number(new URL(mongo.uri).port);
    await proxy.start(target);
    store = new MongoSessionStore<CounterState>({
      // Long enough to open the store through the proxy on a busy machine; each failing call below waits this long.
      uri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true&serverSelectionTimeoutMS=1500`,
      database: DATABASE,
      collectionPrefix: `t${randomBytes(5).toString("hex")}_`,
      failoverWindowMs: 0,
    });
    await commitRecord(store, undefined, checkpointRecord("s1", "r1"));
    await proxy.close();
  }, 60_000);
  afterAll(async () => {
    await store?.close();
  });

  const key = { sessionId: "s1", snapshotId: "r1" };
  it.each<[string, () => Promise<unknown>]>([
    ["reading session s1", () => store.getHead("s1")],
    ["committing session s2", () => store.commit(commitOf(undefined, checkpointRecord("s2", "r2")))],
    ["reading snapshot r1", () => store.getRecord("r1")],
    ["reading the chain of snapshot r1", () => store.getChain("r1")],
    ["listing the snapshots of session s1", () => store.listRecords("s1")],
    ["listing sessions", () => store.listHeads({ owner: "" })],
    ["listing the leased sessions", () => store.listLeasedHeads(10)],
    ["deleting session s1", () => store.deleteSession("s1")],
    ["sweeping expired sessions", () => store.sweepExpired(Date.now())],
    ["pinging the server", () => store.ping()],
    ["appending chunks to the log of snapshot r1", () => store.appendChunks(key, chunks(1, 2), Date.now() + 60_000)],
    ["reading the chunk log of snapshot r1", () => store.readChunks(key, 0, 10)],
    ["keeping the chunk log of snapshot r1", () => store.keepChunks(key, Date.now() + 60_000)],
    ["sweeping chunk logs", () => store.sweepChunks(Date.now())],
  ])("fails UNAVAILABLE naming what it was doing: %s", async (action, op) => {
    await expect(op()).rejects.toMatchObject({
      status: "UNAVAILABLE",
      message: expect.stringContaining(`MongoDB ${action} failed: `),
    });
  });
});
