import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { RecordDocument } from "../../stores/mongodb/record-document.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { adminCommand, freshPrefix } from "./mongodb-fixtures.js";
import {
  checkpointRecord,
  commitOf,
  commitRecord,
  ids,
  pendingRecord,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";

// Commits and record updates whose outcome the client cannot know: mongo-java-server's test
// backend applies a write and then answers it with a write-concern error (64, as a real primary
// whose majority did not acknowledge in time), or fails a write before applying it (a step-down).
// Counts are of write commands (insert, update, delete, findAndModify) in the order they arrive.
const DATABASE = "agentd_commit_outcome";
type Store = MongoSessionStore<CounterState>;

const increment = (e: CounterRecord): CounterRecord => ({
  ...e,
  checkpoint: { ...e.checkpoint!, custom: { n: e.checkpoint!.custom!.n + 1 } },
});

describe("mongodb store: commits and updates of unknown outcome (mongo-java-server)", () => {
  let server: MongoJavaServer;
  let raw: MongoClient;
  const opened: Store[] = [];
  const clearFaults = async (): Promise<void> => {
    await adminCommand(server.uri, { agentdTestWriteConcernError: 1, count: 0 });
    await adminCommand(server.uri, { agentdTestWriteError: 1, count: 0 });
  };
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    raw = new MongoClient(server.uri);
  }, 300_000);
  afterEach(async () => {
    await clearFaults();
    for (const store of opened.splice(0)) await store.close();
  });
  afterAll(async () => {
    await raw?.close();
    await server?.stop();
  });

  /** A fresh store (own prefix), opened before any fault is injected; `records` reads its snapshots raw. */
  const open = async (): Promise<{ store: Store; records: () => Promise<RecordDocument[]> }> => {
    const prefix = freshPrefix();
    const store = new MongoSessionStore<CounterState>({
      uri: server.uri,
      database: DATABASE,
      collectionPrefix: prefix,
      failoverWindowMs: 2_000,
      orphanGraceMs: 0,
    });
    opened.push(store);
    await store.ready();
    const records = () => raw.db(DATABASE).collection<RecordDocument>(`${prefix}snapshots`).find({}).toArray();
    return { store, records };
  };
  const injectAfterApply = (skip: number, count = 1) =>
    adminCommand(server.uri, { agentdTestWriteConcernError: 1, skip, count, code: 64 });
  const injectBeforeApply = (skip: number, count: number) =>
    adminCommand(server.uri, { agentdTestWriteError: 1, skip, count, code: 10107 });

  it("resolves a turn commit whose head write landed but got a write-concern error as committed", async () => {
    const { store } = await open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await injectAfterApply(1); // the record insert passes, the head update is applied and answered with error 64
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    const stored = await store.commit({ ...commitOf(head, next), token: "req-1" });
    expect(stored).toMatchObject({ headSnapshotId: "t1", version: 2, commitToken: "req-1" });
    expect(await store.getHead("s1")).toEqual(stored);
    expect(ids((await store.listRecords("s1")).records)).toEqual(["t1", "root"]);
  });

  it("resolves a session creation whose head insert landed but got a write-concern error as committed", async () => {
    const { store } = await open();
    await injectAfterApply(1); // the record insert passes, the head insert is applied and answered with error 64
    const stored = await store.commit(commitOf(undefined, checkpointRecord("s1", "root")));
    expect(stored).toMatchObject({ headSnapshotId: "root", version: 1 });
    expect((await store.getRecord("root"))?.snapshotId).toBe("root");
  });

  it("resolves a commit whose record insert landed but got a write-concern error as committed", async () => {
    const { store } = await open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await injectAfterApply(0);
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    expect(await store.commit(commitOf(head, next))).toMatchObject({ headSnapshotId: "t1", version: 2 });
    expect((await store.getChain("t1"))?.map((r) => r.snapshotId)).toEqual(["t1"]);
  });

  it("rejects UNAVAILABLE a commit whose head write failed before it was applied, and leaves the head as it was", async () => {
    const { store } = await open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    // The record insert passes; the head update (every retry, through the whole failover window) fails unapplied.
    await injectBeforeApply(1, 1_000);
    const next = checkpointRecord("s1", "lost", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    await expect(store.commit(commitOf(head, next))).rejects.toMatchObject({ status: "UNAVAILABLE" });
    expect(await store.getHead("s1")).toEqual(head);
  });

  it("hides the record of a commit that did not land from every read", async () => {
    const { store, records } = await open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await injectBeforeApply(1, 1_000);
    const next = checkpointRecord("s1", "lost", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    await store.commit(commitOf(head, next)).catch(() => undefined);
    await clearFaults();
    expect(ids(await records())).toContain("lost"); // stored, but its commit did not land
    expect(await store.getRecord("lost")).toBeUndefined();
    expect(await store.getChain("lost")).toBeUndefined();
    expect(ids((await store.listRecords("s1")).records)).toEqual(["root"]);
    expect(ids((await store.listRecords("s1", { includeState: false })).records)).toEqual(["root"]);
    expect(await store.updateRecord("lost", increment)).toBeNull();
  });

  it("sweeps the record of a commit that did not land although its session has a head", async () => {
    const { store, records } = await open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await injectBeforeApply(1, 1_000);
    const next = checkpointRecord("s1", "lost", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    await store.commit(commitOf(head, next)).catch(() => undefined);
    await clearFaults();
    await store.sweepExpired(Date.now() + 1);
    expect(ids(await records())).toEqual(["root"]);
    expect(await store.getHead("s1")).toEqual(head);
  });

  it("keeps visible, and settles in the sweep, the record of a commit that landed but whose pending mark was not cleared", async () => {
    const { store, records } = await open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await injectBeforeApply(2, 1); // record insert and head update pass, clearing the mark fails
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    const stored = await store.commit(commitOf(head, next));
    expect(stored).toMatchObject({ headSnapshotId: "t1" });
    expect((await records()).find((d) => d._id === "t1")?.pending).toBe(true);
    expect((await store.getRecord("t1"))?.snapshotId).toBe("t1");
    expect(ids((await store.listRecords("s1")).records)).toEqual(["t1", "root"]);
    // Later head writes (leases) move the head on; the record stays visible through its token.
    const { version: _v, ...fields } = stored!;
    await store.commit({ expectedVersion: stored!.version, head: { ...fields, updatedAt: T0 + 5 } });
    expect((await store.getRecord("t1"))?.snapshotId).toBe("t1");
    await store.sweepExpired(Date.now() + 1);
    expect((await records()).find((d) => d._id === "t1")?.pending).toBeUndefined();
    expect((await store.getRecord("t1"))?.snapshotId).toBe("t1");
  });

  it("applies an update once when its write landed but got a write-concern error", async () => {
    const { store } = await open();
    await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await injectAfterApply(0);
    expect((await store.updateRecord("root", increment))?.checkpoint?.custom).toEqual({ n: 1 });
    expect((await store.getRecord("root"))?.checkpoint?.custom).toEqual({ n: 1 });
  });

  it("applies an update once when its write landed unacknowledged and another update landed before its retry", async () => {
    const { store } = await open();
    const other = new MongoSessionStore<CounterState>({
      uri: server.uri,
      database: DATABASE,
      collectionPrefix: (store as unknown as { config: { collectionPrefix: string } }).config.collectionPrefix,
    });
    opened.push(other);
    await commitRecord(store, undefined, pendingRecord("s1", "bg"));
    await injectAfterApply(0);
    const beat = (e: CounterRecord): CounterRecord => ({ ...e, heartbeatAt: (e.heartbeatAt ?? 0) + 1 });
    const first = store.updateRecord("bg", beat);
    // Before the first update retries (its backoff is >= 50 ms), another writer updates the record on top of it.
    for (let i = 0; i < 200 && (await other.getRecord("bg"))?.heartbeatAt !== 1; i++)
      await new Promise((r) => setTimeout(r, 2));
    await other.updateRecord("bg", (e) => ({ ...e, updatedAt: T0 + 7 }));
    await first;
    const stored = await store.getRecord("bg");
    expect(stored?.heartbeatAt).toBe(1);
    expect(stored?.updatedAt).toBe(T0 + 7);
  });
});
