import { Binary, MongoClient, type Db, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import { MongoSessionStore, type MongoSessionStoreConfig } from "../../stores/mongodb/mongo-store.js";
import type { StoreCollections } from "../../stores/mongodb/store-collections.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import { mongoForTests } from "../harness/mongo-java-server.js";
import { capturingLogger, commandLog, freshPrefix } from "./mongodb-fixtures.js";
import {
  allRecords,
  checkpointRecord,
  commitOf,
  commitRecord,
  ids,
  pendingRecord,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";

// Session lifecycle on MongoDB beyond the shared conformance group: what is left in the
// collections (every collection of the prefix, every document), the order of the deletes, the
// deletion marker, the TTL index and the sweep's orphan pass.
const DATABASE = "agentd_lifecycle";
let mongo: Awaited<ReturnType<typeof mongoForTests>>;
let raw: MongoClient;
let db: Db;
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

function storeOn(prefix: string, extra: Partial<MongoSessionStoreConfig> = {}): Store {
  return new MongoSessionStore<CounterState>({
    uri: mongo.uri,
    database: DATABASE,
    collectionPrefix: prefix,
    ...extra,
  });
}

/** Documents per collection of the prefix: every collection, whatever it holds. */
async function documentCounts(prefix: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
    // store_meta's orphan-pass position (written by the first sweep) is bookkeeping, not session data.
    const filter = name === `${prefix}store_meta` ? { _id: { $ne: "orphan_scan" as never } } : {};
    if (name.startsWith(prefix)) counts[name.slice(prefix.length)] = await db.collection(name).countDocuments(filter);
  }
  return counts;
}

/** Every string a document holds, binary data decoded as UTF-8 (a chunk's piece of checkpoint JSON). */
function textOf(value: unknown): string {
  if (value instanceof Binary) return Buffer.from(value.buffer).toString("utf8");
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(textOf).join("\u0000");
  if (value && typeof value === "object")
    return Object.entries(value as Document)
      .map(([k, v]) => `${k}\u0000${textOf(v)}`)
      .join("\u0000");
  return String(value);
}

/** Per collection of the prefix: how many documents mention `needle` anywhere (IDs, fields, chunk bytes). */
async function mentions(prefix: string, needle: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
    if (!name.startsWith(prefix)) continue;
    const docs = await db.collection(name).find({}).toArray();
    found[name.slice(prefix.length)] = docs.filter((d) => textOf(d).includes(needle)).length;
  }
  return found;
}

const zeroes = (counts: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.keys(counts).map((k) => [k, 0]));

/** A checkpoint over 8 MiB, so it is stored in chunk documents. */
function bigCheckpoint(
  sessionId: string,
  snapshotId: string,
  n: number,
  extra: Partial<CounterRecord> = {},
): CounterRecord {
  const text = `${sessionId}:${"x".repeat(9 * 1024 * 1024)}`;
  return checkpointRecord(sessionId, snapshotId, {
    checkpoint: { sessionId, messages: [userText(text)], artifacts: [], custom: { n } },
    ...extra,
  });
}

/** A session with a chunked checkpoint, a delta, and a pending record later finalized with another chunked checkpoint. */
async function seedFull(
  store: Store,
  sessionId: string,
  at: number,
  ttlMs?: number,
): Promise<{ head: SessionHead; snapshotIds: string[] }> {
  const root = `${sessionId}-root`;
  const first = commitOf(undefined, bigCheckpoint(sessionId, root, 0, { createdAt: at }));
  let head = (await store.commit({
    ...first,
    head: { ...first.head, labels: { "team.name": sessionId }, ...(ttlMs ? { ttlMs } : {}) },
  }))!;
  const delta: CounterRecord = {
    ...pendingRecord(sessionId, `${sessionId}-d1`, { parentId: root, turnIndex: 1, createdAt: at + 1 }),
    status: "completed",
    delta: { keepMessages: 1, appendMessages: [userText(`more of ${sessionId}`)] },
    depth: 1,
    deltaBytes: 40,
    checkpointTurn: 0,
  };
  head = await commitRecord(store, head, delta);
  await commitRecord(
    store,
    head,
    pendingRecord(sessionId, `${sessionId}-bg`, { parentId: `${sessionId}-d1`, turnIndex: 2, createdAt: at + 2 }),
  );
  await store.updateRecord(`${sessionId}-bg`, (e) => ({
    ...bigCheckpoint(sessionId, e.snapshotId, 2, { parentId: e.parentId, turnIndex: 2, createdAt: e.createdAt }),
  }));
  return { head: (await store.getHead(sessionId))!, snapshotIds: [root, `${sessionId}-d1`, `${sessionId}-bg`] };
}

describe("mongodb session lifecycle: what deleteSession leaves behind", () => {
  it(
    "leaves no document of the session in any collection (heads, snapshots, checkpoint_chunks, …), another session's documents intact",
    { timeout: 120_000 },
    async () => {
      const prefix = freshPrefix();
      const store = storeOn(prefix);
      const kept = await seedFull(store, "kept-6b1e", T0);
      const keptRecords = await allRecords(store, "kept-6b1e");
      const baseline = await documentCounts(prefix);
      const keptMentions = await mentions(prefix, "kept-6b1e");

      await seedFull(store, "doomed-93c4", T0 + 10, 60_000);
      const before = await mentions(prefix, "doomed-93c4");
      // The session is in each of the per-session collections before the delete (chunks: two checkpoints of 2 chunks).
      expect(before).toMatchObject({ heads: 1, snapshots: 3, checkpoint_chunks: 4 });
      expect(await db.collection(`${prefix}checkpoint_chunks`).countDocuments({ sessionId: "doomed-93c4" })).toBe(4);
      before.checkpoint_chunks! += 1; // the stray chunk below
      // A chunk whose writer died before inserting its record: reachable only through its sessionId.
      await db.collection(`${prefix}checkpoint_chunks`).insertOne({
        _id: "stray:0" as never,
        set: "stray",
        seq: 0,
        sessionId: "doomed-93c4",
        data: Buffer.from("{}"),
      });
      // The root checkpoint's chunks as written before chunk documents carried their sessionId: found through the record.
      const root = await db.collection(`${prefix}snapshots`).findOne({ _id: "doomed-93c4-root" as never });
      await db
        .collection(`${prefix}checkpoint_chunks`)
        .updateMany({ set: root!.checkpointChunks.set }, { $unset: { sessionId: "", storedAt: "" } });

      expect(await store.deleteSession("doomed-93c4")).toBe(true);
      expect(await mentions(prefix, "doomed-93c4")).toEqual(zeroes(before));
      expect(await documentCounts(prefix)).toEqual(baseline);
      expect(await mentions(prefix, "kept-6b1e")).toEqual(keptMentions);
      expect(await store.getHead("kept-6b1e")).toEqual(kept.head);
      expect(await allRecords(store, "kept-6b1e")).toEqual(keptRecords);
      expect(ids((await store.getChain("kept-6b1e-d1"))!)).toEqual(["kept-6b1e-root", "kept-6b1e-d1"]);

      expect(await store.deleteSession("doomed-93c4")).toBe(false);
      expect(await documentCounts(prefix)).toEqual(baseline);
      await store.close();
    },
  );

  it("hides the head first (one findAndModify), then deletes records, then chunks, then chunk logs, then the marker; every write majority", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await commitRecord(store, head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 }));
    const log = commandLog(store);
    expect(await store.deleteSession("s1")).toBe(true);
    const writes = log
      .named("findAndModify", "delete", "update", "insert")
      .map((e) => `${e.commandName} ${String(e.command[e.commandName]).slice(prefix.length)}`)
      // The last commit clears its record's pending mark without waiting: that update may land here.
      .filter((w) => w !== "update snapshots");
    expect(writes).toEqual([
      "findAndModify heads",
      "delete snapshots",
      "delete checkpoint_chunks",
      "delete stream_chunks",
      "delete tool_calls",
      "delete heads",
    ]);
    for (const e of log.named("findAndModify", "delete"))
      expect(e.command.writeConcern).toMatchObject({ w: "majority" });
    await store.close();
  });
});

describe("mongodb session lifecycle: the deletion marker", () => {
  it("keeps the session invisible and closed to commits while its records are being deleted", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await seedTwo(store, "other");
    const baseline = await documentCounts(prefix);
    const { head } = await seedTwo(store, "s1", T0 + 10);
    // Hold the deletion between hiding the head and deleting the records.
    const { c } = await (store as unknown as { open(): Promise<{ c: StoreCollections }> }).open();
    const deleteMany = c.records.deleteMany.bind(c.records);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let paused!: () => void;
    const reached = new Promise<void>((resolve) => (paused = resolve));
    c.records.deleteMany = (async (...args: Parameters<typeof deleteMany>) => {
      paused();
      await gate;
      return deleteMany(...args);
    }) as typeof c.records.deleteMany;
    const deletion = store.deleteSession("s1");
    await reached;
    expect(await store.getHead("s1")).toBeUndefined();
    expect((await store.listHeads({ owner: "", now: T0 })).heads.map((h) => h.sessionId)).toEqual(["other"]);
    expect(await store.getRecord("s1-r1")).toBeDefined(); // the records go after the head
    // Neither a writer holding the old head nor one creating the session anew gets in.
    expect(
      await store.commit(
        commitOf(head, checkpointRecord("s1", "late", { parentId: "s1-r1", turnIndex: 2, createdAt: T0 + 20 })),
      ),
    ).toBeUndefined();
    expect(
      await store.commit(commitOf(undefined, checkpointRecord("s1", "anew", { createdAt: T0 + 21 }))),
    ).toBeUndefined();
    release();
    expect(await deletion).toBe(true);
    c.records.deleteMany = deleteMany;
    expect(await store.getHead("s1")).toBeUndefined();
    expect(await documentCounts(prefix)).toEqual(baseline);
    await store.close();
  });

  it("makes a session whose deleter died after its first step invisible and unwritable; deleteSession or a sweep finishes it", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const heads = db.collection(`${prefix}heads`);
    const { head } = await seedTwo(store, "s1");
    await commitRecord(store, undefined, checkpointRecord("other", "other-root"));
    const baseline = await documentCounts(prefix);
    // Step 1 of a deletion, then nothing (the deleter died).
    await heads.updateOne(
      { _id: "s1" as never },
      { $set: { deletingAt: new Date(), version: -1, expireAt: new Date(Date.now() + 600_000) } },
    );
    expect(await store.getHead("s1")).toBeUndefined();
    expect((await store.listHeads({ owner: "", now: T0 })).heads.map((h) => h.sessionId)).toEqual(["other"]);
    // No commit attaches to it: neither on the version a writer read nor as a new session.
    expect(
      await store.commit(
        commitOf(head, checkpointRecord("s1", "late", { parentId: "s1-r1", turnIndex: 2, createdAt: T0 + 5 })),
      ),
    ).toBeUndefined();
    expect(
      await store.commit(commitOf(undefined, checkpointRecord("s1", "reborn", { createdAt: T0 + 6 }))),
    ).toBeUndefined();
    expect(await store.getRecord("late")).toBeUndefined();
    expect(await store.getRecord("reborn")).toBeUndefined();
    // Not yet stalled: a sweep leaves the marker to its deleter.
    expect(await store.sweepExpired(Date.now())).toBe(0);
    expect(await heads.countDocuments({ _id: "s1" as never })).toBe(1);
    // Stalled: the sweep finishes it (not counted: it was no expired session).
    await heads.updateOne({ _id: "s1" as never }, { $set: { expireAt: new Date(Date.now() - 1) } });
    expect(await store.sweepExpired(Date.now())).toBe(0);
    expect(await documentCounts(prefix)).toEqual({
      ...baseline,
      heads: baseline.heads! - 1,
      snapshots: baseline.snapshots! - 2,
    });
    // And deleteSession finishes one too.
    await seedTwo(store, "s2");
    await heads.updateOne({ _id: "s2" as never }, { $set: { deletingAt: new Date(), version: -1 } });
    expect(await store.deleteSession("s2")).toBe(true);
    expect(Object.values(await mentions(prefix, "s2-r")).every((n) => n === 0)).toBe(true);
    expect(await heads.countDocuments({ _id: "s2" as never })).toBe(0);
    // A new session of that ID can be created afterwards.
    expect(
      await store.commit(commitOf(undefined, checkpointRecord("s1", "reborn", { createdAt: T0 + 7 }))),
    ).toMatchObject({ version: 1 });
    await store.close();
  });

  it("deletes records left without a head when asked explicitly (true), and nothing else", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await seedTwo(store, "s1");
    await seedTwo(store, "s2");
    await db.collection(`${prefix}heads`).deleteOne({ _id: "s1" as never });
    expect(await store.deleteSession("s1")).toBe(true);
    expect(await documentCounts(prefix)).toMatchObject({ heads: 1, snapshots: 2 });
    expect(await store.getHead("s2")).toBeDefined();
    await store.close();
  });
});

async function seedTwo(
  store: Store,
  sessionId: string,
  at = T0,
  extra: Partial<SessionHead> = {},
): Promise<{ head: SessionHead }> {
  const first = commitOf(undefined, checkpointRecord(sessionId, `${sessionId}-r0`, { createdAt: at }));
  const head = (await store.commit({ ...first, head: { ...first.head, ...extra } }))!;
  return {
    head: await commitRecord(
      store,
      head,
      checkpointRecord(sessionId, `${sessionId}-r1`, { parentId: `${sessionId}-r0`, turnIndex: 1, createdAt: at + 1 }),
    ),
  };
}

describe("mongodb session lifecycle: expiry", () => {
  it("creates the TTL index (expireAfterSeconds 0) on the heads' expireAt Date, and the listing index", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await store.ready();
    const headIndexes = await db.collection(`${prefix}heads`).listIndexes().toArray();
    const ttl = headIndexes.find((i) => JSON.stringify(i.key) === JSON.stringify({ expireAt: 1 }));
    expect(ttl).toMatchObject({ name: "expire_at_ttl", expireAfterSeconds: 0 });
    expect(headIndexes.find((i) => i.name === "owner_updated")?.key).toEqual({ owner: 1, updatedAt: -1, _id: -1 });
    expect(headIndexes.find((i) => i.name === "lease_expires_id")).toMatchObject({
      key: { "lease.expiresAt": 1, _id: 1 },
      sparse: true,
    });
    expect((await db.collection(`${prefix}checkpoint_chunks`).listIndexes().toArray()).map((i) => i.name)).toContain(
      "chunk_session",
    );
    // expireAt mirrors expiresAt as a Date, and goes when the session no longer expires.
    const { head } = await seedTwo(store, "s1", T0, { ttlMs: 5_000, labels: { env: "prod" } });
    const doc = await db.collection(`${prefix}heads`).findOne({ _id: "s1" as never });
    expect(doc!.expireAt).toEqual(new Date(T0 + 1 + 5_000));
    expect(head.expiresAt).toBe(T0 + 1 + 5_000);
    const { ttlMs: _ttl, expiresAt: _exp, version: _v, ...rest } = head;
    await store.commit({ expectedVersion: head.version, head: { ...rest, updatedAt: T0 + 9 } });
    const cleared = await db.collection(`${prefix}heads`).findOne({ _id: "s1" as never });
    expect(cleared).not.toHaveProperty("expireAt");
    expect(cleared).not.toHaveProperty("expiresAt");
    expect(cleared!.labelPairs).toEqual(["env=prod"]);
    await store.close();
  });

  it("with ttlGraceMs the TTL index's expireAt is the grace after expiresAt, and sweepExpired still deletes at expiresAt", async () => {
    const prefix = freshPrefix();
    const before = storeOn(prefix); // a head written without the grace
    await seedTwo(before, "old", T0, { ttlMs: 5_000 });
    await seedTwo(before, "old-later", T0, { ttlMs: 10_000 });
    await before.close();
    const store = storeOn(prefix, { ttlGraceMs: 60_000 });
    await seedTwo(store, "graced", T0, { ttlMs: 5_000 });
    await seedTwo(store, "graced-later", T0, { ttlMs: 10_000 });
    const heads = db.collection(`${prefix}heads`);
    expect((await heads.findOne({ _id: "graced" as never }))!.expireAt).toEqual(new Date(T0 + 1 + 5_000 + 60_000));
    expect(await store.sweepExpired(T0 + 5_000)).toBe(0);
    expect(await store.sweepExpired(T0 + 1 + 5_000)).toBe(2);
    expect((await heads.find({}).toArray()).map((d) => d._id).sort()).toEqual(["graced-later", "old-later"]);
    expect(await store.sweepExpired(T0 + 1 + 10_000)).toBe(2);
    await store.close();
  });

  it("uses an operator's plain index on expireAt as it is and warns that MongoDB will not expire heads by itself", async () => {
    const prefix = freshPrefix();
    await db.collection(`${prefix}heads`).createIndex({ expireAt: 1 }, { name: "ops_expire" });
    const logger = capturingLogger();
    const store = storeOn(prefix, { logger });
    await store.ready();
    const names = (await db.collection(`${prefix}heads`).listIndexes().toArray()).map((i) => i.name).sort();
    expect(names).toEqual(["_id_", "lease_expires_id", "ops_expire", "owner_updated"]);
    expect(logger.lines.map((l) => l.message)).toEqual([
      expect.stringMatching(
        /"ops_expire".*not a TTL index.*MongoDB does not remove expired heads by itself\. .*collMod.*expireAfterSeconds: 0/,
      ),
    ]);
    await store.close();
  });

  it("uses an operator's TTL index on expireAt with another expireAfterSeconds as it is and warns that MongoDB expires heads on its own schedule", async () => {
    const prefix = freshPrefix();
    await db.collection(`${prefix}heads`).createIndex({ expireAt: 1 }, { name: "ops_ttl", expireAfterSeconds: 3600 });
    const logger = capturingLogger();
    const store = storeOn(prefix, { logger });
    await store.ready();
    expect(logger.lines.map((l) => l.message)).toEqual([
      expect.stringMatching(
        /"ops_ttl" on \{"expireAt":1\} with expireAfterSeconds 3600; agentd would create it with expireAfterSeconds 0\. .*MongoDB removes expired heads on its own schedule\./,
      ),
    ]);
    await store.close();
  });

  it("keeps a session renewed between the sweep's query and its deletion, and does not count it", async () => {
    const prefix = freshPrefix();
    // One connection: the renewal below is queued before the sweep's next command.
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true, maxPoolSize: 1 } });
    const { head } = await seedTwo(store, "renewed", T0, { ttlMs: 1_000 });
    const heads = store.driverClient.db(DATABASE).collection<{ _id: string }>(`${prefix}heads`);
    const later = head.expiresAt! + 3_600_000;
    let renewal: Promise<unknown> | undefined;
    store.driverClient.on("commandSucceeded", (event) => {
      const ns = (event.reply as { cursor?: { ns?: string } }).cursor?.ns;
      // What another instance's commit does to the head, the moment the sweep has found it expired.
      if (renewal === undefined && event.commandName === "find" && ns === `${DATABASE}.${prefix}heads`)
        renewal = heads.updateOne(
          { _id: "renewed" },
          { $set: { updatedAt: later - 1_000, expiresAt: later, expireAt: new Date(later) }, $inc: { version: 1 } },
        );
    });
    expect(await store.sweepExpired(head.expiresAt!)).toBe(0);
    expect(renewal).toBeDefined();
    await renewal;
    expect(await store.getHead("renewed")).toMatchObject({ expiresAt: later, version: head.version + 1 });
    expect(ids(await allRecords(store, "renewed"))).toEqual(["renewed-r1", "renewed-r0"]);
    await store.close();
  });

  it(
    "sweeps a session with a 50 ms ttl at now = expiresAt (not a millisecond before), chunks included",
    { timeout: 120_000 },
    async () => {
      const prefix = freshPrefix();
      const store = storeOn(prefix);
      await seedTwo(store, "forever");
      const baseline = await documentCounts(prefix);
      const { head } = await seedFull(store, "brief-5d0a", T0 + 100, 50);
      expect(head.expiresAt).toBe(head.updatedAt + 50);
      expect(await store.sweepExpired(head.expiresAt! - 1)).toBe(0);
      expect(await store.getHead("brief-5d0a")).toEqual(head);
      const present = await mentions(prefix, "brief-5d0a");
      expect(present).toMatchObject({ heads: 1, snapshots: 3, checkpoint_chunks: 4 });
      expect(await store.sweepExpired(head.expiresAt!)).toBe(1);
      expect(await mentions(prefix, "brief-5d0a")).toEqual(zeroes(present));
      expect(await documentCounts(prefix)).toEqual(baseline);
      expect(await store.sweepExpired(head.expiresAt!)).toBe(0);
      await store.close();
    },
  );

  it("deletes the records and chunks of sessions whose head the TTL monitor removed, in bounded steps, sparing young ones", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { orphanScanBatch: 2, orphanGraceMs: 60_000 });
    const heads = db.collection(`${prefix}heads`);
    await seedTwo(store, "alive", T0);
    const orphans = ["o1", "o2", "o3", "o4", "o5"];
    for (const id of orphans) await commitRecord(store, undefined, checkpointRecord(id, `${id}-r0`, { createdAt: T0 }));
    // What MongoDB's TTL monitor does: delete the expired heads, nothing else.
    await heads.deleteMany({ _id: { $in: orphans as never[] } });
    // Within the grace period the records may belong to a commit between its record and its head write.
    for (let i = 0; i < 4; i++) expect(await store.sweepExpired(Date.now())).toBe(0);
    expect(await documentCounts(prefix)).toMatchObject({ heads: 1, snapshots: 7 });
    // A chunk whose record was never inserted (its writer died), long ago.
    const chunks = db.collection(`${prefix}checkpoint_chunks`);
    await chunks.insertOne({
      _id: "lost:0" as never,
      set: "lost",
      seq: 0,
      sessionId: "o-lost",
      storedAt: new Date(Date.now() - 3_600_000),
      data: Buffer.from("{}"),
    });

    // After it, each sweep examines at most 2 index entries per collection, round robin, until all are gone.
    const later = Date.now() + 120_000;
    const perSweep: number[] = [];
    for (let i = 0; i < 8 && (await db.collection(`${prefix}snapshots`).countDocuments()) > 2; i++)
      perSweep.push(await store.sweepExpired(later));
    expect(Math.max(...perSweep)).toBeLessThanOrEqual(3); // ≤ 2 sessions from snapshots + ≤ 1 from chunks
    expect(perSweep.length).toBeGreaterThan(1);
    expect(perSweep.reduce((a, b) => a + b, 0)).toBe(6);
    expect(await documentCounts(prefix)).toMatchObject({ heads: 1, snapshots: 2, checkpoint_chunks: 0 });
    // The session with a head is untouched.
    expect(ids(await allRecords(store, "alive"))).toEqual(["alive-r1", "alive-r0"]);
    await store.close();
  });
});

describe("mongodb session lifecycle: where the orphan pass continues", () => {
  it("continues the orphan pass where the last sweep stopped, in a restarted or another instance (position kept in store_meta)", async () => {
    const prefix = freshPrefix();
    const seeding = storeOn(prefix);
    // Sessions are scanned in sessionId order: four live ones first, then two whose head the TTL monitor removed.
    for (const id of ["a1", "a2", "a3", "a4", "z1", "z2"])
      await commitRecord(seeding, undefined, checkpointRecord(id, `${id}-r0`, { createdAt: T0 }));
    await db.collection(`${prefix}heads`).deleteMany({ _id: { $in: ["z1", "z2"] as never[] } });
    await seeding.close();
    const later = Date.now() + 120_000;
    const removed: number[] = [];
    // Each sweep runs in a new instance and examines 2 index entries: from the start every time, it would
    // only ever see a1 and a2.
    for (let i = 0; i < 3; i++) {
      const instance = storeOn(prefix, { orphanScanBatch: 2, orphanGraceMs: 0 });
      removed.push(await instance.sweepExpired(later));
      await instance.close();
    }
    expect(removed).toEqual([0, 0, 2]);
    expect(await documentCounts(prefix)).toMatchObject({ heads: 4, snapshots: 4 });
  });
});

describe("mongodb session lifecycle: the orphan pass and checkpoint chunks", () => {
  it(
    "removes an orphaned session's chunks, older ones without a sessionId included, and no chunk of a live session",
    { timeout: 120_000 },
    async () => {
      const prefix = freshPrefix();
      const store = storeOn(prefix, { orphanGraceMs: 0 });
      await commitRecord(store, undefined, bigCheckpoint("alive", "alive-r0", 0));
      await commitRecord(store, undefined, bigCheckpoint("orphan", "orphan-r0", 0));
      const chunks = db.collection(`${prefix}checkpoint_chunks`);
      // Chunks written before chunks carried their sessionId: only the record's chunk set leads to them.
      await chunks.updateMany({ sessionId: "orphan" }, { $unset: { sessionId: "" } });
      // What MongoDB's TTL monitor does: delete the expired head, nothing else.
      await db.collection(`${prefix}heads`).deleteOne({ _id: "orphan" as never });
      expect(await documentCounts(prefix)).toMatchObject({ heads: 1, snapshots: 2, checkpoint_chunks: 4 });
      expect(await store.sweepExpired(Date.now() + 1_000)).toBe(1);
      expect(await documentCounts(prefix)).toMatchObject({ heads: 1, snapshots: 1, checkpoint_chunks: 2 });
      expect(await store.getRecord("alive-r0")).toMatchObject({ checkpoint: { custom: { n: 0 } } });
      await store.close();
    },
  );
});

describe("mongodb session lifecycle: leased heads", () => {
  it("asks for leased live heads with one query on the sparse lease index (filter, sort, limit as given)", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    const now = Date.now();
    await seedTwo(store, "b", T0, { lease: { invocationId: "inv-b", expiresAt: now + 2000 } });
    await seedTwo(store, "a", T0, { lease: { invocationId: "inv-a", expiresAt: now + 1000 } });
    await seedTwo(store, "plain", T0);
    const log = commandLog(store);
    expect((await store.listLeasedHeads(7)).map((h) => h.sessionId)).toEqual(["a", "b"]);
    const finds = log.named("find").filter((e) => String(e.command.find).endsWith("heads"));
    expect(finds).toHaveLength(1);
    const { filter, sort, limit, readConcern } = finds[0]!.command;
    expect(filter).toEqual({ "lease.expiresAt": { $exists: true }, deletingAt: { $exists: false } });
    expect([...(sort as Map<string, number>)]).toEqual([
      ["lease.expiresAt", 1],
      ["_id", 1],
    ]);
    expect(limit).toBe(7);
    expect(readConcern).toEqual({ level: "majority" });
    await store.close();
  });

  it("leaves out a head being deleted (a deletion marker), as getHead does", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const now = Date.now();
    await seedTwo(store, "s1", T0, { lease: { invocationId: "inv-1", expiresAt: now + 1000 } });
    await seedTwo(store, "s2", T0, { lease: { invocationId: "inv-2", expiresAt: now + 2000 } });
    // Step 1 of a deletion, then nothing (the deleter died): the marker keeps the lease fields.
    await db
      .collection(`${prefix}heads`)
      .updateOne(
        { _id: "s1" as never },
        { $set: { deletingAt: new Date(), version: -1, expireAt: new Date(now + 600_000) } },
      );
    expect(await db.collection(`${prefix}heads`).findOne({ _id: "s1" as never })).toHaveProperty("lease");
    expect(await store.getHead("s1")).toBeUndefined();
    expect((await store.listLeasedHeads(10)).map((h) => h.sessionId)).toEqual(["s2"]);
    await store.close();
  });

  it("uses an operator's plain (not sparse) index on lease.expiresAt and _id as it is", async () => {
    const prefix = freshPrefix();
    await db.collection(`${prefix}heads`).createIndex({ "lease.expiresAt": 1, _id: 1 }, { name: "ops_lease" });
    const store = storeOn(prefix);
    await seedTwo(store, "s1", T0, { lease: { invocationId: "inv-1", expiresAt: Date.now() } });
    expect((await store.listLeasedHeads(10)).map((h) => h.sessionId)).toEqual(["s1"]);
    const names = (await db.collection(`${prefix}heads`).listIndexes().toArray()).map((i) => i.name).sort();
    expect(names).toEqual(["_id_", "expire_at_ttl", "ops_lease", "owner_updated"]);
    await store.close();
  });
});

describe("mongodb session lifecycle: listing", () => {
  it("filters on label keys holding dots and values holding '=' by exact pairs", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await seedTwo(store, "a", T0, { labels: { "team.name": "x", k: "a=b" } });
    await seedTwo(store, "b", T0 + 5, { labels: { team: "x", k: "a" } });
    const list = async (labels: Record<string, string>) =>
      (await store.listHeads({ owner: "", labels, now: T0 })).heads.map((h) => h.sessionId);
    expect(await list({ "team.name": "x" })).toEqual(["a"]);
    expect(await list({ team: "x" })).toEqual(["b"]);
    expect(await list({ k: "a" })).toEqual(["b"]);
    expect(await list({ k: "a=b" })).toEqual(["a"]);
    expect(await list({ "team.name": "x", k: "a" })).toEqual([]);
    expect((await store.getHead("a"))!.labels).toEqual({ "team.name": "x", k: "a=b" });
    await store.close();
  });

  it("pages with a query the owner/updatedAt/_id index answers in order (sort and limit pageSize + 1)", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    for (let i = 0; i < 5; i++) await seedTwo(store, `s${i}`, T0 + i * 10);
    const log = commandLog(store);
    const first = await store.listHeads({ owner: "", pageSize: 2, now: T0 });
    const second = await store.listHeads({ owner: "", pageSize: 2, pageToken: first.nextPageToken!, now: T0 });
    expect([...first.heads, ...second.heads].map((h) => h.sessionId)).toEqual(["s4", "s3", "s2", "s1"]);
    const finds = log.named("find").filter((e) => String(e.command.find).endsWith("heads"));
    expect(finds).toHaveLength(2);
    for (const e of finds) {
      expect([...(e.command.sort as Map<string, number>)]).toEqual([
        ["updatedAt", -1],
        ["_id", -1],
      ]);
      expect(e.command.limit).toBe(3);
      expect(e.command.readConcern).toEqual({ level: "majority" });
    }
    await expect(store.listHeads({ owner: "", pageToken: "h.bm90IGpzb24" })).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
    });
    await expect(store.listHeads({ owner: "", pageSize: 0 })).rejects.toMatchObject({ status: "INVALID_ARGUMENT" });
    await store.close();
  });
});
