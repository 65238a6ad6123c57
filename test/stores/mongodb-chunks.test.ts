import { BSON } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { TTL_BACKSTOP_MS } from "../../stores/mongodb/chunk-retention.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { expectAgentError } from "../harness/agent-error-expectations.js";
import { chunk, chunks } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import {
  closeChangeStreamCursors,
  capturingLogger,
  freshPrefix,
  holdStreamOpening,
  useMongoServer,
  watchBaselinesRead,
} from "./mongodb-fixtures.js";
import { commitRecord, eventually, pendingRecord, type CounterState } from "./snapshot-factory.js";

// The MongoDB store's chunk logs beyond the conformance suite: the documents and indexes, the
// 16 MiB limit, repeated sequences, the watchers' change streams (reopening, ordering a read after
// a watcher's baseline, a deployment without change streams) and the orphan pass.

const DATABASE = "agentd_chunks";
const mongo = useMongoServer(DATABASE);
const storeOn = mongo.storeOn;

const BG = { sessionId: "s1", snapshotId: "bg" };

describe("mongodb chunk logs: documents and indexes", () => {
  it("stores one document per chunk (its JSON as a string, its append's keepUntil, expireAt 30 days later)", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, chunks(1, 2), K);
    await store.appendChunks(BG, [chunk(3)], K + 1);
    const docs = await mongo.db
      .collection(`${prefix}stream_chunks`)
      .find({}, { projection: { _id: 0 } })
      .sort({ sequence: 1 })
      .toArray();
    expect(docs).toEqual(
      chunks(1, 3).map((c) => ({
        snapshotId: "bg",
        sessionId: "s1",
        sequence: c.sequence,
        chunk: JSON.stringify(c.chunk),
        keepUntil: new Date(c.sequence === 3 ? K + 1 : K),
        expireAt: new Date((c.sequence === 3 ? K + 1 : K) + TTL_BACKSTOP_MS),
      })),
    );
  });

  it("keepChunks writes one keep document for the log and rewrites no chunk", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, chunks(1, 3), K);
    const collection = mongo.db.collection(`${prefix}stream_chunks`);
    const before = await collection
      .find({ sequence: { $gt: 0 } })
      .sort({ sequence: 1 })
      .toArray();
    await store.keepChunks(BG, K + 50);
    await store.keepChunks(BG, K + 60);
    expect(
      await collection
        .find({ sequence: { $gt: 0 } })
        .sort({ sequence: 1 })
        .toArray(),
    ).toEqual(before);
    expect(await collection.find({ sequence: 0 }, { projection: { _id: 0 } }).toArray()).toEqual([
      {
        snapshotId: "bg",
        sequence: 0,
        sessionId: "s1",
        keepUntil: new Date(K + 60),
        keptThrough: 3,
        expireAt: new Date(K + 60 + TTL_BACKSTOP_MS),
      },
    ]);
  });

  it("creates a unique index on (snapshotId, sequence), a TTL index on expireAt (expireAfterSeconds 0) and one on sessionId", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await store.ready();
    const indexes = await mongo.db.collection(`${prefix}stream_chunks`).listIndexes().toArray();
    const byName = Object.fromEntries(indexes.map((i) => [i.name as string, i]));
    expect(byName.log_sequence).toMatchObject({ key: { snapshotId: 1, sequence: 1 }, unique: true });
    expect(byName.expire_at_ttl).toMatchObject({ key: { expireAt: 1 }, expireAfterSeconds: 0 });
    expect(byName.log_session).toMatchObject({ key: { sessionId: 1 } });
  });

  it("fails FAILED_PRECONDITION when an index on (snapshotId, sequence) exists without uniqueness", async () => {
    const prefix = freshPrefix();
    await mongo.db
      .collection(`${prefix}stream_chunks`)
      .createIndex({ snapshotId: 1, sequence: 1 }, { name: "ops_log" });
    const store = storeOn(prefix);
    await expectAgentError(
      store.ready(),
      "FAILED_PRECONDITION",
      /"ops_log" .* not unique; agentd needs a unique index/,
    );
  });

  it("uses an operator's unique index on (snapshotId, sequence) under another name", async () => {
    const prefix = freshPrefix();
    await mongo.db
      .collection(`${prefix}stream_chunks`)
      .createIndex({ snapshotId: 1, sequence: 1 }, { name: "ops_log", unique: true });
    const store = storeOn(prefix);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const names = (await mongo.db.collection(`${prefix}stream_chunks`).listIndexes().toArray())
      .map((i) => i.name)
      .sort();
    expect(names).toEqual(["_id_", "expire_at_ttl", "log_session", "ops_log"]);
  });

  it("refuses a chunk over MongoDB's 16 MiB document limit with RESOURCE_EXHAUSTED, appending none of the batch", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const huge = {
      sequence: 2,
      chunk: { modelChunk: { role: "model", content: [{ text: "x".repeat(17 * 1024 * 1024) }] } },
    };
    const error = await expectAgentError(
      store.appendChunks(BG, [chunk(1), huge as { sequence: number; chunk: AgentStreamChunk }], Date.now() + HOUR),
      "RESOURCE_EXHAUSTED",
      /chunk 2 of snapshot bg needs a 17\.0 MiB document, over MongoDB's 16 MiB document limit; nothing was appended/,
    );
    expect(error.details).toMatchObject({ snapshotId: "bg", sequence: 2, limitBytes: 16 * 1024 * 1024 });
    expect(await store.hasChunks(BG)).toBe(false);
  });

  it("refuses with RESOURCE_EXHAUSTED a chunk whose document is under 16 MiB only without the _id it is stored with", async () => {
    const store = storeOn(freshPrefix());
    const chunkOfText = (text: string) => ({ modelChunk: { role: "model", content: [{ text }] } });
    const documentBytes = (text: string): number =>
      BSON.calculateObjectSize({ ...BG, sequence: 1, chunk: JSON.stringify(chunkOfText(text)), expireAt: new Date() });
    const text = "x".repeat(16 * 1024 * 1024 - documentBytes("") - 8); // 8 bytes under the limit without _id
    await expectAgentError(
      store.appendChunks(BG, [{ sequence: 1, chunk: chunkOfText(text) as AgentStreamChunk }], Date.now() + HOUR),
      "RESOURCE_EXHAUSTED",
      /chunk 1 of snapshot bg needs a 16\.0 MiB document, over MongoDB's 16 MiB document limit/,
    );
    expect(await store.hasChunks(BG)).toBe(false);
  });

  it("refuses a sequence the log already holds with ALREADY_EXISTS", async () => {
    const store = storeOn(freshPrefix());
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    await expectAgentError(
      store.appendChunks(BG, chunks(2, 3), Date.now() + HOUR),
      "ALREADY_EXISTS",
      /already holds a chunk of sequences 2-3/,
    );
  });

  it("sweeps a log whole only once every chunk's expireAt has passed", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, chunks(1, 2), K);
    await store.appendChunks(BG, [chunk(3)], K + 1000); // the log's keep-until: its latest
    expect(await store.sweepChunks(K)).toBe(0);
    expect(await mongo.db.collection(`${prefix}stream_chunks`).countDocuments()).toBe(3);
    expect(await store.sweepChunks(K + 1000)).toBe(1);
    expect(await mongo.db.collection(`${prefix}stream_chunks`).countDocuments()).toBe(0);
  });

  it("sweeps more logs than one batch", { timeout: 60_000 }, async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    const K = Date.now() + HOUR;
    const docs = Array.from({ length: 1234 }, (_, i) => ({
      snapshotId: `bg-${String(i).padStart(4, "0")}`,
      sessionId: "s1",
      sequence: 1,
      chunk: "{}",
      expireAt: new Date(i % 2 === 0 ? K : K + 1000),
    }));
    await mongo.db.collection(`${prefix}stream_chunks`).insertMany(docs);
    expect(await store.sweepChunks(K)).toBe(617);
    expect(await mongo.db.collection(`${prefix}stream_chunks`).countDocuments()).toBe(617);
  });

  it("removes the chunk logs of a session whose head is gone in sweepExpired's orphan pass", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await commitRecord(store, undefined, pendingRecord("s1", "bg"));
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    await mongo.db.collection(`${prefix}heads`).deleteOne({ _id: "s1" as never }); // as MongoDB's TTL monitor would
    await store.sweepExpired(Date.now());
    expect(await store.hasChunks(BG)).toBe(false);
  });
});

describe("mongodb chunk logs: watchers", () => {
  it("wakes a watcher for an append by another instance through its change stream", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix);
    const writer = storeOn(prefix);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1);
    } finally {
      await watch.stop();
    }
    await eventually(() => watcher.chunkWatcherCount === 0);
  });

  it("wakes once its stream is established for an append another instance made between the call and then", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix);
    const writer = storeOn(prefix);
    // The watcher asks for its collection twice before its stream exists: for the baseline read, then to
    // open the stream. Hold the second until the other instance's append is acknowledged: that append
    // has no change event on the stream, only the catch-up read after it is established can report it.
    const hold = holdStreamOpening(watcher, 1, 1);
    const watch = startWatch(watcher, BG);
    try {
      await hold.firstHeld;
      await watchBaselinesRead(watcher, BG);
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      hold.release();
      await watch.untilWakes(1);
      expect(await watcher.readChunks(BG, 0, 10)).toEqual([chunk(1)]);
    } finally {
      hold.release(); // a failure before the append leaves nothing held
      await watch.stop();
    }
  });

  it("sends a read of a watched log only after the watcher's baseline read answered (watch, then read, misses nothing)", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    // Open a few connections first, so the baseline and the read could go out at the same moment.
    await Promise.all([store.hasChunks(BG), store.hasChunks(BG), store.hasChunks(BG)]);
    // The finds on the chunk collection, sent and answered, in the order the driver reports them.
    const events: { what: "sent" | "answered"; requestId: number; sort?: unknown }[] = [];
    const finds = new Set<number>();
    store.driverClient.on("commandStarted", (e) => {
      if (e.commandName !== "find" || e.command.find !== `${prefix}stream_chunks`) return;
      finds.add(e.requestId);
      const sort = e.command.sort as Map<string, number> | Record<string, number>; // the driver sends a Map
      events.push({
        what: "sent",
        requestId: e.requestId,
        sort: sort instanceof Map ? Object.fromEntries(sort) : sort,
      });
    });
    store.driverClient.on("commandSucceeded", (e) => {
      if (finds.has(e.requestId)) events.push({ what: "answered", requestId: e.requestId });
    });
    const watch = startWatch(store, BG);
    try {
      expect(await store.readChunks(BG, 0, 10)).toEqual([chunk(1)]);
      const baseline = events.find((e) => e.what === "sent" && JSON.stringify(e.sort) === '{"sequence":-1}');
      const read = events.find((e) => e.what === "sent" && JSON.stringify(e.sort) === '{"sequence":1}');
      expect(read).toBeDefined();
      const answered = events.findIndex((e) => e.what === "answered" && e.requestId === baseline?.requestId);
      expect(answered).toBeGreaterThanOrEqual(0);
      expect(events.indexOf(read!)).toBeGreaterThan(answered);
    } finally {
      await watch.stop();
    }
  });

  it("reopens its change stream after the server closes it and still wakes for the next append", async () => {
    const prefix = freshPrefix();
    const logger = capturingLogger();
    const watcher = storeOn(prefix, { logger });
    const writer = storeOn(prefix);
    const watch = startWatch(watcher, BG);
    try {
      await closeChangeStreamCursors(mongo.server.uri, () => watcher.chunkStreamsOpen === 1);
      await eventually(() => logger.lines.some((l) => l.message === "MongoDB chunk change stream ended; reopening it"));
      expect(logger.lines.find((l) => l.message.startsWith("MongoDB chunk change stream"))?.fields).toMatchObject({
        watchedLogs: 1,
        reason: "the server closed the change stream's cursor",
        resume: false,
      });
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1);
    } finally {
      await watch.stop();
    }
  });
});

describe("mongodb chunk logs on a deployment without change streams", () => {
  let standalone: MongoJavaServer;
  beforeAll(async () => {
    standalone = await MongoJavaServer.start(0, { changeStreams: false });
  }, 300_000);
  afterAll(async () => {
    await standalone?.stop();
  });

  it("ends a watcher with FAILED_PRECONDITION saying a replica set is needed, holding nothing", async () => {
    const store = new MongoSessionStore<CounterState>({
      uri: standalone.uri,
      database: DATABASE,
      collectionPrefix: freshPrefix(),
    });
    try {
      const watch = startWatch(store, BG);
      await expectAgentError(watch.ended, "FAILED_PRECONDITION", /cannot run change streams.*replica set/);
      await eventually(() => store.chunkWatcherCount === 0);
    } finally {
      await store.close();
    }
  });
});
