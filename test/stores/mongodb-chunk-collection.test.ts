import { describe, expect, it } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import type { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { expectAgentError, expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { chunk, chunks } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import { adminCommand, commandLog, freshPrefix, holdStreamOpening, useMongoServer } from "./mongodb-fixtures.js";
import { eventually, sleep, type CounterState } from "./snapshot-factory.js";

// The MongoDB store's chunk collection beyond the conformance suite and mongodb-chunks.test.ts:
// what its errors say (and which status they map to), the fields its reads fetch, sweeps over
// unusual snapshot IDs and full batches, and in-process wake-ups that need no change stream.

const DATABASE = "agentd_chunk_collection";
const BG = { sessionId: "s1", snapshotId: "bg" };
const mongo = useMongoServer(DATABASE);
const storeOn = mongo.storeOn;

/** A store whose driver reports every command it sends. */
function monitoredStore(prefix = freshPrefix()): MongoSessionStore<CounterState> {
  return storeOn(prefix, { clientOptions: { monitorCommands: true } });
}

/** The next write on the server fails with a write-concern error of `code` (after it was applied). */
const failNextWrite = (code: number): Promise<unknown> =>
  adminCommand(mongo.server.uri, { agentdTestWriteConcernError: 1, count: 1, code });

/** Makes the server answer reads as a stepped-down primary for `ms`; resolves once that window is over. */
async function whileSteppedDown(ms: number, during: () => Promise<void>): Promise<void> {
  const until = Date.now() + ms;
  await adminCommand(mongo.server.uri, { agentdTestStepDown: 1, ms });
  try {
    await during();
  } finally {
    await sleep(Math.max(0, until - Date.now()) + 200);
  }
}

describe("mongodb chunk collection: errors", () => {
  it("tells how to stay under the 16 MiB document limit", async () => {
    const huge = { sequence: 1, chunk: { modelChunk: { role: "model", content: [{ text: "x".repeat(17 << 20) }] } } };
    await expectAgentError(
      storeOn().appendChunks(BG, [huge as { sequence: number; chunk: AgentStreamChunk }], Date.now() + HOUR),
      "RESOURCE_EXHAUSTED",
      /Stream smaller chunks \(e\.g\. an artifact in parts, or stored elsewhere and referenced\) or use the SQLite or PostgreSQL store \(64 MiB per record\)\.$/,
    );
  });

  it("explains a repeated sequence and keeps the driver's duplicate-key error as the cause", async () => {
    const store = storeOn();
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    const error = await expectAgentError(
      store.appendChunks(BG, chunks(2, 3), Date.now() + HOUR),
      "ALREADY_EXISTS",
      "the chunk log of snapshot bg already holds a chunk of sequences 2-3; an append must continue after the log's " +
        "last sequence (chunks before the repeated one were appended)",
    );
    expect(error.cause).toMatchObject({ code: 11000 });
  });

  it("stores none of an append's chunks after the first sequence the log already holds", async () => {
    const store = storeOn();
    await store.appendChunks(BG, [chunk(2)], Date.now() + HOUR);
    await expectAgentError(store.appendChunks(BG, chunks(1, 3), Date.now() + HOUR), "ALREADY_EXISTS");
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(1, 2));
  });

  it("reports an append's write-concern error as the store's error, not as a repeated sequence", async () => {
    const store = storeOn();
    await store.ready();
    await failNextWrite(100);
    await expectAgentError(
      store.appendChunks(BG, [chunk(1)], Date.now() + HOUR),
      "FAILED_PRECONDITION",
      /^MongoDB appending chunks to the log of snapshot bg failed: /,
    );
  });

  it("names the log in keepChunks' write errors", async () => {
    const store = storeOn();
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await failNextWrite(100);
    await expectAgentError(
      store.keepChunks(BG, Date.now() + 2 * HOUR),
      "FAILED_PRECONDITION",
      /^MongoDB keeping the chunk log of snapshot bg failed: /,
    );
  });

  it("names the sweep in sweepChunks' write errors", async () => {
    const store = storeOn();
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, [chunk(1)], K);
    await failNextWrite(100);
    await expectAgentError(store.sweepChunks(K), "FAILED_PRECONDITION", /^MongoDB sweeping chunk logs failed: /);
  });

  it("answers UNAVAILABLE naming the log when readChunks meets a stepped-down server", async () => {
    const store = storeOn(freshPrefix(), { failoverWindowMs: 0 });
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await whileSteppedDown(1_500, async () => {
      await expectAgentError(
        store.readChunks(BG, 0, 10),
        "UNAVAILABLE",
        /^MongoDB reading the chunk log of snapshot bg failed: /,
      );
    });
  });

  it("answers UNAVAILABLE naming the log when hasChunks meets a stepped-down server", async () => {
    const store = storeOn(freshPrefix(), { failoverWindowMs: 0 });
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await whileSteppedDown(1_500, async () => {
      await expectAgentError(
        store.hasChunks(BG),
        "UNAVAILABLE",
        /^MongoDB reading the chunk log of snapshot bg failed: /,
      );
    });
  });

  it("answers DATA_LOSS for a stored chunk that is not JSON, saying how to drop the log", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await store.ready();
    await mongo.db
      .collection(`${prefix}stream_chunks`)
      .insertOne({ ...BG, sequence: 1, chunk: "{not json", expireAt: new Date(Date.now() + HOUR) });
    const error = await expectAgentError(
      store.readChunks(BG, 0, 10),
      "DATA_LOSS",
      `chunk 1 of snapshot bg in "${prefix}stream_chunks" is not a stored chunk (its "chunk" is not JSON); ` +
        `delete the log's documents to drop it`,
    );
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it("names the method in each key error", async () => {
    const store = storeOn();
    const bad = { sessionId: "", snapshotId: "bg" };
    await expectAgentError(store.hasChunks(bad), "INVALID_ARGUMENT", /^hasChunks: the key/);
    await expectAgentError(store.keepChunks(bad, Date.now() + HOUR), "INVALID_ARGUMENT", /^keepChunks: the key/);
    expectThrowsAgentError(
      () => store.watchChunks(bad, new AbortController().signal),
      "INVALID_ARGUMENT",
      /^watchChunks: the key/,
    );
  });
});

describe("mongodb chunk collection: what reads fetch", () => {
  /** The projection of the finds on the chunk collection the store sent (as plain objects). */
  const projections = (log: ReturnType<typeof commandLog>, prefix: string): unknown[] =>
    log
      .named("find")
      .filter((e) => e.command.find === `${prefix}stream_chunks`)
      .map((e) => e.command.projection as unknown);

  it("reads a log's chunks fetching only their sequence and chunk", async () => {
    const prefix = freshPrefix();
    const store = monitoredStore(prefix);
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    const log = commandLog(store);
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(1, 2));
    expect(projections(log, prefix)).toEqual([{ _id: 0, sequence: 1, chunk: 1 }]);
  });

  it("tells whether a log exists fetching only a document ID, never a chunk", async () => {
    const prefix = freshPrefix();
    const store = monitoredStore(prefix);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const log = commandLog(store);
    expect(await store.hasChunks(BG)).toBe(true);
    expect(projections(log, prefix)).toEqual([{ _id: 1 }]);
  });

  it("reads a watcher's baseline fetching only the highest sequence, never a chunk", async () => {
    const prefix = freshPrefix();
    const store = monitoredStore(prefix);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const log = commandLog(store);
    const watch = startWatch(store, BG);
    try {
      await eventually(() => projections(log, prefix).length > 0);
      expect(projections(log, prefix)[0]).toEqual({ sequence: 1 });
    } finally {
      await watch.stop();
    }
  });

  it("checks a sweep candidate fetching only its keep document's times and a kept chunk's ID", async () => {
    const prefix = freshPrefix();
    const store = monitoredStore(prefix);
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, [chunk(1)], K);
    const log = commandLog(store);
    expect(await store.sweepChunks(K)).toBe(1);
    expect(projections(log, prefix)).toEqual([{ _id: 0, keepUntil: 1, keptThrough: 1 }, { _id: 1 }]);
  });
});

describe("mongodb chunk collection: sweeps", () => {
  it("sweeps logs whose snapshot IDs start with a digit or a capital letter", async () => {
    const store = storeOn();
    const K = Date.now() + HOUR;
    for (const snapshotId of ["0-run", "Alpha", "Run.2"])
      await store.appendChunks({ ...BG, snapshotId }, [chunk(1)], K);
    expect(await store.sweepChunks(K)).toBe(3);
  });

  it("walks past a full batch of logs that a later chunk keeps", { timeout: 60_000 }, async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix);
    await store.ready();
    const K = Date.now() + HOUR;
    const kept = Array.from({ length: 501 }, (_, i) => `a-${String(i).padStart(3, "0")}`).flatMap((snapshotId) => [
      { snapshotId, sessionId: "s1", sequence: 1, chunk: "{}", expireAt: new Date(K) },
      { snapshotId, sessionId: "s1", sequence: 2, chunk: "{}", expireAt: new Date(K + 1000) },
    ]);
    await mongo.db
      .collection(`${prefix}stream_chunks`)
      .insertMany([...kept, { snapshotId: "z", sessionId: "s1", sequence: 1, chunk: "{}", expireAt: new Date(K) }]);
    expect(await store.sweepChunks(K)).toBe(1);
    expect(await store.hasChunks({ sessionId: "s1", snapshotId: "z" })).toBe(false);
  });
});

describe("mongodb chunk collection: concurrent sweeps", () => {
  it("counts each removed log once when two instances sweep at the same time", { timeout: 60_000 }, async () => {
    const prefix = freshPrefix();
    const [first, second] = [storeOn(prefix), storeOn(prefix)];
    await Promise.all([first.ready(), second.ready()]);
    const K = Date.now() + HOUR;
    const logs = Array.from({ length: 300 }, (_, i) => ({
      snapshotId: `bg-${String(i).padStart(3, "0")}`,
      sessionId: "s1",
      sequence: 1,
      chunk: "{}",
      expireAt: new Date(K),
    }));
    await mongo.db.collection(`${prefix}stream_chunks`).insertMany(logs);
    const [a, b] = await Promise.all([first.sweepChunks(K), second.sweepChunks(K)]);
    expect(a + b).toBe(300);
  });
});

describe("mongodb chunk collection: in-process wake-ups", () => {
  it("wakes every watcher of a log in this instance at the append, before their change streams open", async () => {
    const store = storeOn();
    await store.ready();
    const hold = holdStreamOpening(store, 1, 1); // one baseline read and one stream for both watchers
    const first = startWatch(store, BG);
    const second = startWatch(store, BG);
    try {
      await eventually(() => hold.held() === 1);
      await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await first.untilWakes(1);
      await second.untilWakes(1);
    } finally {
      hold.release();
      await Promise.all([first.stop(), second.stop()]);
    }
  });

  it("keeps waking a watcher at the append after another watcher of the same log stopped", async () => {
    const store = storeOn();
    await store.ready();
    const hold = holdStreamOpening(store, 1, 1); // one baseline read and one stream for both watchers
    const leaving = startWatch(store, BG);
    const staying = startWatch(store, BG);
    try {
      await eventually(() => hold.held() === 1);
      await leaving.stop();
      await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await staying.untilWakes(1);
    } finally {
      hold.release();
      await Promise.all([leaving.stop(), staying.stop()]);
    }
  });
});
