import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { writeHead, type HeadDocument } from "../../stores/mongodb/head-document.js";
import { moveHead } from "../../stores/mongodb/commit-writes.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { storeCollections } from "../../stores/mongodb/store-collections.js";
import type { RecordDocument } from "../../stores/mongodb/record-document.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { MongoWireTap, type TappedCommand } from "../harness/mongo-wire-tap.js";
import { freshPrefix } from "./mongodb-fixtures.js";
import {
  checkpointRecord,
  commitOf,
  commitRecord,
  eventually,
  ids,
  T0,
  type CounterState,
} from "./snapshot-factory.js";

// The proof that a pending record's commit landed must outlive any number of later head writes,
// and an outcome the store cannot learn must never be read as "did not land". Faults come from a
// wire tap between the store and mongo-java-server that cuts chosen commands before or after the
// server applied them.
const DATABASE = "agentd_commit_proof";
type Store = MongoSessionStore<CounterState>;

/** The command clearing a record's pending mark (a settle). */
const isSettle = (c: TappedCommand): boolean =>
  c.name === "update" &&
  c.collection.endsWith("snapshots") &&
  JSON.stringify(c.command.updates ?? []).includes('"$unset":{"pending"');

describe("mongodb store: commit proofs that cannot expire (mongo-java-server, wire tap)", () => {
  let server: MongoJavaServer;
  let tap: MongoWireTap;
  let raw: MongoClient;
  const opened: Store[] = [];
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    tap = await MongoWireTap.start(server.port);
    raw = new MongoClient(server.uri);
  }, 300_000);
  afterEach(async () => {
    tap.failpoint = undefined;
    tap.cutHeld();
    for (const store of opened.splice(0)) await store.close();
  });
  afterAll(async () => {
    await raw?.close();
    await tap?.close();
    await server?.stop();
  });

  const open = async (prefix = freshPrefix(), orphanGraceMs = 0, viaTap = true): Promise<Store> => {
    const uri = viaTap
      ? `mongodb://127.0.0.1:${tap.port}/?directConnection=true&serverSelectionTimeoutMS=5000`
      : server.uri;
    const store = new MongoSessionStore<CounterState>({
      uri,
      database: DATABASE,
      collectionPrefix: prefix,
      failoverWindowMs: 2_000,
      orphanGraceMs,
    });
    opened.push(store);
    await store.ready();
    return store;
  };
  const prefixOf = (store: Store) =>
    (store as unknown as { config: { collectionPrefix: string } }).config.collectionPrefix;
  const rawRecord = (store: Store, id: string) =>
    raw
      .db(DATABASE)
      .collection<RecordDocument>(`${prefixOf(store)}snapshots`)
      .findOne({ _id: id });
  const rawHead = (store: Store, id: string) =>
    raw
      .db(DATABASE)
      .collection<HeadDocument>(`${prefixOf(store)}heads`)
      .findOne({ _id: id });

  it("keeps a landed record whose mark was never cleared readable after 40 later head writes and a sweep with zero grace", async () => {
    const store = await open();
    const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    tap.failpoint = (c) => (isSettle(c) ? "hold" : "pass"); // the settle never reaches the server (a crash)
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    let head = (await store.commit(commitOf(root, next)))!;
    expect(head).toMatchObject({ headSnapshotId: "t1" });
    for (let i = 0; i < 40; i++) {
      // Lease-like head writes: the head moves on, far past the 32-slot token ring.
      const { version, ...fields } = head;
      head = (await store.commit({ expectedVersion: version, head: { ...fields, updatedAt: T0 + 10 + i } }))!;
    }
    expect((await rawRecord(store, "t1"))?.pending).toBe(true);
    expect((await store.getRecord("t1"))?.snapshotId).toBe("t1");
    expect(ids((await store.listRecords("s1")).records)).toEqual(["t1", "root"]);
    // Another instance (the restarted process) sweeps with zero grace: the record is settled, not deleted.
    const restarted = await open(prefixOf(store), 0, false);
    for (let i = 0; i < 3; i++) await restarted.sweepExpired(Date.now() + 1);
    expect((await rawRecord(store, "t1"))?.pending).toBeUndefined();
    expect((await restarted.getChain("t1"))?.map((r) => r.snapshotId)).toEqual(["t1"]);
    expect(Object.keys((await rawHead(store, "s1"))?.pendingCommits ?? {})).toEqual([]);
    tap.cutHeld();
  });

  it("settles a committed pending record on a read by another instance", async () => {
    const store = await open();
    const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    tap.failpoint = (c) => (isSettle(c) ? "hold" : "pass");
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    await store.commit(commitOf(root, next));
    expect((await rawRecord(store, "t1"))?.pending).toBe(true);
    const reader = await open(prefixOf(store), 0, false);
    expect((await reader.getRecord("t1"))?.snapshotId).toBe("t1");
    await eventually(async () => (await rawRecord(store, "t1"))?.pending === undefined);
    const token = (await rawRecord(store, "t1"))!.commitToken!;
    expect((await rawHead(store, "s1"))?.pendingCommits?.[token]).toBe(1);
    await reader.close(); // flushes the settled token off the head
    expect((await rawHead(store, "s1"))?.pendingCommits?.[token]).toBeUndefined();
  });

  it("reports a retried commit whose outcome check is inconclusive as unknown, never as a conflict, and keeps its record", async () => {
    const store = await open();
    const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    let headWrites = 0;
    tap.failpoint = (c) => {
      if (c.name === "update" && c.collection.endsWith("heads") && headWrites++ === 0) return "cut-after";
      // Every read of the head fails: the store can never learn whether its head write landed.
      if (c.name === "find" && c.collection.endsWith("heads")) return "cut-before";
      return "pass";
    };
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    await expect(store.commit({ ...commitOf(root, next), token: "req-1" })).rejects.toMatchObject({
      status: "UNAVAILABLE",
      details: { outcome: "unknown" },
    });
    tap.failpoint = undefined;
    expect(await rawHead(store, "s1")).toMatchObject({ headSnapshotId: "t1", commitToken: "req-1" });
    expect((await store.getRecord("t1"))?.snapshotId).toBe("t1");
    await store.sweepExpired(Date.now() + 1);
    expect((await store.getChain("t1"))?.map((r) => r.snapshotId)).toEqual(["t1"]);
  });

  it("answers a retried head write that finds another version with an unknown outcome while the head cannot be read, never with a conflict", async () => {
    const store = await open();
    const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    const commit = { ...commitOf(root, next), token: "req-1" };
    await store.commit(commit); // an earlier attempt whose write landed (its reply lost)
    const token = (await rawRecord(store, "t1"))!.commitToken!;
    const client = new MongoClient(`mongodb://127.0.0.1:${tap.port}/?directConnection=true`);
    try {
      const c = storeCollections(client.db(DATABASE), prefixOf(store), 0);
      tap.failpoint = (cmd) => (cmd.name === "find" && cmd.collection.endsWith("heads") ? "cut-before" : "pass");
      // The retry: its compare-and-set finds version 2, and no read of the head gets through before the deadline.
      const retry = moveHead(c, { ...commit.head, version: 2 }, 1, token, { deadline: 0, closed: () => false }, true, {
        recordId: "t1",
      });
      await expect(retry).rejects.toMatchObject({ status: "UNAVAILABLE", details: { outcome: "unknown" } });
    } finally {
      tap.failpoint = undefined;
      await client.close();
    }
  });

  it("deletes in the sweep a pending record only after fencing its token, so its commit can never land later", async () => {
    const store = await open();
    const root = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    // The head write is never sent: the commit fails, its record stays pending.
    tap.failpoint = (c) => (c.name === "update" && c.collection.endsWith("heads") ? "cut-before" : "pass");
    const lost = checkpointRecord("s1", "lost", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    const commit = commitOf(root, lost);
    await expect(store.commit(commit)).rejects.toMatchObject({ status: "UNAVAILABLE" });
    tap.failpoint = undefined;
    const token = (await rawRecord(store, "lost"))!.commitToken!;
    const sweeper = await open(prefixOf(store), 0, false);
    await sweeper.sweepExpired(Date.now() + 1);
    expect(await rawRecord(store, "lost")).toBeNull();
    expect((await rawHead(store, "s1"))?.fencedTokens).toContain(token);
    // The late head write of that commit (same version, same token) cannot land any more.
    const heads = raw.db(DATABASE).collection<HeadDocument>(`${prefixOf(store)}heads`);
    const { version, ...fields } = commit.head as typeof root;
    void version;
    expect(await writeHead(heads, { ...fields, version: root.version + 1 }, root.version, token)).toBe(false);
    expect(await store.getHead("s1")).toEqual(root);
  });
});
