import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { mongoForTests, type MongoJavaServer } from "../harness/mongo-java-server.js";
import { runStoreConformance } from "./conformance.js";
import { eventually, snapshotRow, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

let mongo: Awaited<ReturnType<typeof mongoForTests>>;
// The first run builds the launcher with Maven (downloads mongo-java-server): allow for it.
beforeAll(async () => {
  mongo = await mongoForTests();
}, 300_000);
afterAll(async () => {
  await mongo?.stop();
});

/** A store on a fresh collection prefix, so tests never see each other's rows. */
function freshStore(): MongoSessionStore<CounterState> {
  const collectionPrefix = `t${randomBytes(5).toString("hex")}_`;
  const store = new MongoSessionStore<CounterState>({ uri: mongo.uri, database: "agentd_test", collectionPrefix });
  prefixes.set(store, collectionPrefix);
  return store;
}

/** A second store instance (own client) on the same collection as `store`: its writes reach `store` only via MongoDB. */
function sameCollection(store: MongoSessionStore<CounterState>): MongoSessionStore<CounterState> {
  return new MongoSessionStore<CounterState>({ uri: mongo.uri, database: "agentd_test", collectionPrefix: prefixes.get(store)! });
}
const prefixes = new WeakMap<MongoSessionStore<CounterState>, string>();

runStoreConformance("mongodb", async () => {
  const store = freshStore();
  return { store, openResources: () => (store.changeStreamOpen ? 1 : 0) };
});

describe("mongodb store", () => {
  it("rejects a state over 16 MB with RESOURCE_EXHAUSTED and leaves the row intact", async () => {
    const store = freshStore();
    const small = await store.saveSnapshot("big", () => snapshotRow("s1"));
    const chunk = "y".repeat(1024 * 1024);
    const messages = Array.from({ length: 17 }, () => userText(chunk));
    const attempt = store.saveSnapshot("big", (e) => ({ ...e!, state: { messages, artifacts: [], custom: { n: 1 } } }));
    await expect(attempt).rejects.toMatchObject({ status: "RESOURCE_EXHAUSTED", message: expect.stringMatching(/16 MiB document limit/) });
    expect(await store.getSnapshot("big")).toEqual(small);
    await store.close();
  });

  it("delivers a status change written by another store instance through the change stream", async () => {
    const watcher = freshStore();
    const writer = sameCollection(watcher);
    await writer.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
    const { seen, stop } = recordStatuses(watcher, "bg");
    await eventually(() => seen.length === 1 && watcher.changeStreamOpen);
    await writer.saveSnapshot("bg", (e) => ({ ...e!, status: "aborted" }));
    await eventually(() => seen.length === 2);
    await stop();
    expect(seen).toEqual(["pending", "aborted"]);
    await watcher.close();
    await writer.close();
  });

  it("serves every subscriber of a store instance from one change stream, closed when the last leaves", async () => {
    const watcher = freshStore();
    const writer = sameCollection(watcher);
    const ids = ["a", "b", "c"];
    for (const id of ids) await writer.saveSnapshot(id, () => snapshotRow("s1", { status: "pending" }));
    const recorders = ids.map((id) => recordStatuses(watcher, id));
    const seen = recorders.map((r) => r.seen);
    await eventually(() => watcher.changeStreamOpen && seen.every((s) => s.length === 1));
    for (const id of ids) await writer.saveSnapshot(id, (e) => ({ ...e!, status: "completed" }));
    await eventually(() => seen.every((s) => s.length === 2));
    await Promise.all([recorders[0]!.stop(), recorders[1]!.stop()]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(watcher.changeStreamOpen).toBe(true);
    await recorders[2]!.stop();
    await eventually(() => !watcher.changeStreamOpen);
    expect(seen).toEqual(ids.map(() => ["pending", "completed"]));
    await watcher.close();
    await writer.close();
  });
});

describe("mongodb store across a server restart", () => {
  // mongo-java-server keeps data in memory, so a restart empties it: after the restart the
  // pending row is written again (as a detached turn's heartbeat would), then another instance
  // aborts it. The watcher's change stream must reopen and deliver the abort. Against
  // MONGODB_URI (nothing to restart) the same test checks delivery without the restart.
  it("still delivers the next status change to an active subscriber after the server restarts", async () => {
    const server: MongoJavaServer | undefined = mongo.server;
    const watcher = freshStore();
    const writer = sameCollection(watcher);
    await writer.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
    const { seen, stop } = recordStatuses(watcher, "bg");
    await eventually(() => seen.length === 1 && watcher.changeStreamOpen);
    if (server) {
      await server.restart();
      await eventually(() => watcher.changeStreamReopens >= 1, 30_000);
      await writer.saveSnapshot("bg", () => snapshotRow("s1", { status: "pending" }));
    }
    await writer.saveSnapshot("bg", (e) => ({ ...e!, status: "aborted" }));
    await eventually(() => seen.length === 2, 30_000);
    await stop();
    expect(seen).toEqual(["pending", "aborted"]);
    await watcher.close();
    await writer.close();
  });
});
