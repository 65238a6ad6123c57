import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoJavaServer } from "../harness/mongo-java-server.js";

// The test double must never hand out a document half-way through an update: mongo-java-server
// updates stored documents in place and serialises query results after its collection lock is
// released, so without AgentdTestBackend's read/write lock (results copied under it) a reader
// racing a writer could see some fields of the old version and some of the new one.
const FIELDS = 64;
const WRITES = 1500;

let server: MongoJavaServer;
let client: MongoClient;
beforeAll(async () => {
  server = await MongoJavaServer.start();
  client = new MongoClient(server.uri, { maxPoolSize: 8 });
}, 300_000);
afterAll(async () => {
  await client?.close();
  await server?.stop();
});

/** A document whose every field holds `version`: a torn read shows two different values. */
function versioned(version: number): Record<string, number> {
  return Object.fromEntries(Array.from({ length: FIELDS }, (_, i) => [`f${i}`, version]));
}

describe("mongo-java-server double", () => {
  it("never returns a half-updated document to a reader racing a writer", { timeout: 120_000 }, async () => {
    const docs = client.db("double_reads").collection<{ _id: string; [field: string]: unknown }>("torn");
    await docs.insertOne({ _id: "d", ...versioned(0) });
    let writing = true;
    const torn: string[] = [];
    let reads = 0;
    const writer = (async () => {
      for (let v = 1; v <= WRITES; v++) await docs.updateOne({ _id: "d" }, { $set: versioned(v) });
      writing = false;
    })();
    const reader = async (): Promise<void> => {
      while (writing) {
        const doc = await docs.findOne({ _id: "d" });
        reads++;
        const values = new Set(Array.from({ length: FIELDS }, (_, i) => String(doc?.[`f${i}`])));
        if (values.size !== 1) torn.push([...values].join(","));
      }
    };
    await Promise.all([writer, ...Array.from({ length: 6 }, reader)]);
    expect(reads).toBeGreaterThan(WRITES);
    expect(torn).toEqual([]);
  });
});
