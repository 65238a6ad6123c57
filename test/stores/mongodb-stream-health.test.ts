import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { freshPrefix } from "./mongodb-fixtures.js";
import type { CounterState } from "./snapshot-factory.js";

// A status change stream that cannot open, ever (a deployment without change streams): after
// PERMANENT_AFTER_FAILED_OPENS failed opens (about 7 s of backoff) subscribers end UNAVAILABLE
// and the store's ping, the server's health probe, fails.
let server: MongoJavaServer;
beforeAll(async () => {
  server = await MongoJavaServer.start(0, { changeStreams: false });
}, 300_000);
afterAll(async () => {
  await server?.stop();
});

describe("mongodb store: a status stream that fails for good", () => {
  it("ends its subscribers with UNAVAILABLE and makes ping fail", { timeout: 60_000 }, async () => {
    const store = new MongoSessionStore<CounterState>({
      uri: server.uri,
      database: "health",
      collectionPrefix: freshPrefix(),
    });
    await store.ping(); // the server answers; no stream has failed yet
    const subscription = new AbortController();
    const seen: string[] = [];
    const ended = (async () => {
      for await (const status of store.subscribeStatus("s1", subscription.signal)) seen.push(status);
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    const error = await ended;
    expect(error).toMatchObject({
      status: "UNAVAILABLE",
      message: expect.stringMatching(/status change stream .* failed to open 8 times in a row/),
    });
    expect(seen).toEqual([]);
    await expect(store.ping()).rejects.toMatchObject({ status: "UNAVAILABLE" });
    await store.close();
  });
});
