import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { mongoForTests } from "../harness/mongo-java-server.js";
import { ResettingProxy } from "../harness/resetting-proxy.js";
import { freshPrefix } from "./mongodb-fixtures.js";
import { checkpointRecord, commitOf, commitRecord, T0, type CounterState } from "./snapshot-factory.js";

// A connection that goes silent (a NAT or load balancer dropped it without a reset; seen here when a
// proxy's reset does not reach the driver): the driver waits on it with no limit of its own
// (socketTimeoutMS 0). The store gives each call up at the end of its failover window instead (here 1 s,
// so at MIN_ATTEMPT_MS, 5 s into the attempt).
describe.skipIf(Boolean(process.env.MONGODB_URI))("mongodb store: a connection that goes silent", () => {
  const proxy = new ResettingProxy();
  let stopMongo: () => Promise<void>;
  let store: MongoSessionStore<CounterState>;
  let head: Awaited<ReturnType<typeof commitRecord>>;

  beforeAll(async () => {
    const mongo = await mongoForTests();
    stopMongo = mongo.stop;
    await proxy.start(mongo.server!.port);
    store = new MongoSessionStore<CounterState>({
      uri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true&serverSelectionTimeoutMS=1500`,
      database: "agentd_silent",
      collectionPrefix: freshPrefix(),
      failoverWindowMs: 1_000,
    });
    head = await commitRecord(store, undefined, checkpointRecord("s1", "r1"));
    proxy.silence();
  }, 120_000);
  afterAll(async () => {
    await proxy.close();
    await store?.close();
    await stopMongo?.();
  });

  it("answers a read UNAVAILABLE at the end of its failover window, naming the silence", async () => {
    await expect(store.getHead("s1")).rejects.toMatchObject({
      status: "UNAVAILABLE",
      message: expect.stringContaining("MongoDB reading session s1 failed: the server did not answer"),
    });
  });

  it("answers a commit as one of unknown outcome (its writes may still land) at the end of its failover window", async () => {
    const next = checkpointRecord("s1", "r2", { parentId: "r1", turnIndex: 1, createdAt: T0 + 1 });
    await expect(store.commit(commitOf(head, next))).rejects.toMatchObject({
      status: "UNAVAILABLE",
      details: { outcome: "unknown" },
    });
  });

  it("answers a record update UNAVAILABLE at the end of its failover window", async () => {
    await expect(store.updateRecord("r1", (r) => ({ ...r, status: "aborted" }))).rejects.toMatchObject({
      status: "UNAVAILABLE",
      message: expect.stringContaining("the server did not answer"),
    });
  });
});
