import { afterAll, describe, expect, it } from "vitest";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { freePort } from "../harness/caller-trace.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { until } from "../harness/until.js";
import { freshPrefix } from "./mongodb-fixtures.js";
import { checkpointRecord, commitRecord, type CounterState } from "./snapshot-factory.js";

// A store whose first connection fails (the server is not up yet, or answers too slowly on a loaded
// machine) must connect once the server is there. The driver keeps the topology its first automatic
// connection closed, so without an explicit connect every later call would fail "Topology is closed".
describe("mongodb store whose first connection failed", () => {
  let server: MongoJavaServer | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it("connects on a later call once the server listens", { timeout: 120_000 }, async () => {
    const port = await freePort();
    const store = new MongoSessionStore<CounterState>({
      uri: `mongodb://127.0.0.1:${port}/?directConnection=true&serverSelectionTimeoutMS=300`,
      database: "agentd_first_connect",
      collectionPrefix: freshPrefix(),
      failoverWindowMs: 0,
    });
    // Nothing listens yet: the call fails after its attempts, and the driver closes the topology it made.
    await expect(store.ready()).rejects.toMatchObject({ status: "UNAVAILABLE" });
    server = await MongoJavaServer.start(port);
    // A later call connects (a loaded machine may need a few: each waits only 300 ms for the server).
    // Without an explicit connect, every one of them fails "Topology is closed" and this wait times out.
    await until("the store connects once the server listens", async () => (await store.ready(), true), {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    expect(await store.getHead("s1")).toEqual(head);
    await store.close();
  });
});
