import type { CommandStartedEvent, Long } from "mongodb";
import { describe, expect, it } from "vitest";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import { freePort } from "../harness/caller-trace.js";
import { chunk } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import {
  adminCommand,
  capturingLogger,
  commandLog,
  freshPrefix,
  holdStreamOpening,
  useMongoServer,
} from "./mongodb-fixtures.js";
import { eventually, sleep, type CounterState } from "./snapshot-factory.js";

// A chunk watcher's change stream (ChunkStream) beyond mongodb-chunks.test.ts: which inserts wake
// it, how it reopens after the server ends it or refuses to open it (the log lines, the resume
// token), and that it keeps retrying (rather than ending) while the server cannot be reached.

const DATABASE = "agentd_chunk_stream";
const BG = { sessionId: "s1", snapshotId: "bg" };
const OPEN_FAILED = "MongoDB chunk change stream could not be opened; retrying";
const REOPENING = "MongoDB chunk change stream ended; reopening it";
const mongo = useMongoServer(DATABASE);
const storeOn = mongo.storeOn;

/** The `$changeStream` stages of the change-stream aggregates the store sent on its chunk collection. */
function changeStreamStages(log: ReturnType<typeof commandLog>, prefix: string): Record<string, unknown>[] {
  return log
    .named("aggregate")
    .filter((e) => e.command.aggregate === `${prefix}stream_chunks`)
    .map((e) => (e.command.pipeline as Record<string, unknown>[])[0]?.$changeStream as Record<string, unknown>)
    .filter((stage) => stage !== undefined);
}

describe("mongodb chunk stream: what wakes it", () => {
  it("wakes for its own log's appends through its one change stream, whatever other logs get", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    const writer = storeOn(prefix);
    const log = commandLog(watcher);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await writer.appendChunks({ ...BG, snapshotId: "other" }, [chunk(7)], Date.now() + HOUR);
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1);
      await writer.appendChunks(BG, [chunk(2)], Date.now() + HOUR);
      await watch.untilWakes(2);
      expect(changeStreamStages(log, prefix)).toHaveLength(1);
    } finally {
      await watch.stop();
    }
  });

  it("wakes for an insert into its log whose sequence is not a number", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await mongo.db
        .collection(`${prefix}stream_chunks`)
        .insertOne({ ...BG, sequence: "1", chunk: "{}", expireAt: new Date(Date.now() + HOUR) });
      await watch.untilWakes(1);
    } finally {
      await watch.stop();
    }
  });

  it("opens no change stream when stopped while it waited for the store", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    await store.ready();
    const log = commandLog(store);
    const hold = holdStreamOpening(store, 1, 1);
    const watch = startWatch(store, BG);
    try {
      await eventually(() => hold.held() === 1);
      await watch.stop();
    } finally {
      hold.release();
    }
    await eventually(() => store.chunkWatcherCount === 0);
    expect(changeStreamStages(log, prefix)).toEqual([]);
  });
});

describe("mongodb chunk stream: reading the highest sequence", () => {
  it("reads the log's highest sequence only for its baseline and once its stream is open, not while idle", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    await store.ready();
    const log = commandLog(store);
    const watch = startWatch(store, BG);
    try {
      await eventually(() => store.chunkStreamsOpen === 1);
      await sleep(1_000); // some forty idle polls of the stream
      const highest = log
        .named("find")
        .filter((e) => e.command.find === `${prefix}stream_chunks`)
        .map((e) => e.command.sort as Map<string, number> | Record<string, number>)
        .filter((sort) => JSON.stringify(sort instanceof Map ? Object.fromEntries(sort) : sort) === '{"sequence":-1}');
      expect(highest).toHaveLength(2);
    } finally {
      await watch.stop();
    }
  });
});

describe("mongodb chunk stream: the driver's own resume", () => {
  it("wakes for an append made while the driver resumed its stream by itself (cursor killed on the server)", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    const writer = storeOn(prefix);
    await writer.ready();
    const log = commandLog(watcher);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      const polls = (): CommandStartedEvent[] =>
        log.named("getMore").filter((e) => e.command.collection === `${prefix}stream_chunks`);
      await eventually(() => polls().length > 0);
      const id = polls()[0]!.command.getMore as Long; // cursor IDs are int64 on the wire
      const killed = await mongo.db.command({ killCursors: `${prefix}stream_chunks`, cursors: [id] });
      expect(killed.cursorsKilled).toHaveLength(1);
      // Written before the stream's next getMore: mongo-java-server sends no post-batch resume token, so the
      // driver resumes from "now" and only the catch-up read after its resume can report this append.
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1);
      expect(changeStreamStages(log, prefix)).toHaveLength(2); // the driver's resume: a second aggregate
    } finally {
      await watch.stop();
    }
  });
});

describe("mongodb chunk stream: polling", () => {
  it("asks the server to hold each poll of its stream up to a second while nothing happens", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, { clientOptions: { monitorCommands: true } });
    await store.ready();
    const log = commandLog(store);
    const watch = startWatch(store, BG);
    try {
      await eventually(() => store.chunkStreamsOpen === 1);
      await eventually(() => log.named("getMore").some((e) => e.command.collection === `${prefix}stream_chunks`));
      const polls = log.named("getMore").filter((e) => e.command.collection === `${prefix}stream_chunks`);
      expect(polls[0]!.command.maxTimeMS).toBe(1000);
    } finally {
      await watch.stop();
    }
  });
});

describe("mongodb chunk stream: reopening", () => {
  it("reopens from now, without a resume token, after the server closed its stream", async () => {
    const prefix = freshPrefix();
    const logger = capturingLogger();
    const watcher = storeOn(prefix, { logger, clientOptions: { monitorCommands: true } });
    const writer = storeOn(prefix);
    const log = commandLog(watcher);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR); // an event: the stream now has a resume token
      await watch.untilWakes(1);
      await adminCommand(mongo.server.uri, { agentdTestCloseChangeStreams: 1 });
      await eventually(() => logger.lines.some((l) => l.message === REOPENING));
      await eventually(() => watcher.chunkStreamsOpen === 1);
      const stages = changeStreamStages(log, prefix);
      expect(stages.length).toBeGreaterThanOrEqual(2);
      expect(stages.every((stage) => !("resumeAfter" in stage))).toBe(true);
    } finally {
      await watch.stop();
    }
  });

  it("says once that its stream could not be opened while the server is stepped down, then opens it", async () => {
    const prefix = freshPrefix();
    const logger = capturingLogger();
    const watcher = storeOn(prefix, { logger });
    const writer = storeOn(prefix);
    await Promise.all([watcher.ready(), writer.ready()]);
    await adminCommand(mongo.server.uri, { agentdTestStepDown: 1, ms: 2_500 });
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => logger.lines.some((l) => l.message === OPEN_FAILED));
      await eventually(() => watcher.chunkStreamsOpen === 1, 20_000);
      const lines = logger.lines.filter((l) => l.message.startsWith("MongoDB chunk change stream"));
      expect(lines.map((l) => l.message)).toEqual([OPEN_FAILED]);
      expect(lines[0]!.fields).toMatchObject({
        watchedLogs: 1,
        resume: true,
        reason: expect.stringMatching(/^transient error: /),
      });
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1);
    } finally {
      await watch.stop();
    }
  });

  it("reopens from its last event's resume token after a transient error", async () => {
    const prefix = freshPrefix();
    const logger = capturingLogger();
    const watcher = storeOn(prefix, { logger, clientOptions: { monitorCommands: true } });
    const writer = storeOn(prefix);
    await writer.ready();
    const log = commandLog(watcher);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR); // an event: the stream now has a resume token
      await watch.untilWakes(1);
      const polls = log.named("getMore").filter((e) => e.command.collection === `${prefix}stream_chunks`);
      // The driver's own resume after the killed cursor meets a stepped-down server (NotPrimaryNoSecondaryOk: transient).
      await adminCommand(mongo.server.uri, { agentdTestStepDown: 1, ms: 2_500 });
      await mongo.db.command({
        killCursors: `${prefix}stream_chunks`,
        cursors: [polls[polls.length - 1]!.command.getMore],
      });
      await eventually(() => logger.lines.some((l) => l.fields.resume === true));
      await eventually(() => watcher.chunkStreamsOpen === 1, 20_000);
      const stages = changeStreamStages(log, prefix);
      expect(stages[stages.length - 1]).toHaveProperty("resumeAfter");
    } finally {
      await watch.stop();
    }
  });

  it("counts its stream as not open while the server keeps it from reopening", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix);
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await adminCommand(mongo.server.uri, { agentdTestStepDown: 1, ms: 2_500 });
      await adminCommand(mongo.server.uri, { agentdTestCloseChangeStreams: 1 });
      await eventually(() => watcher.chunkStreamsOpen === 0);
      await eventually(() => watcher.chunkStreamsOpen === 1, 20_000);
    } finally {
      await watch.stop();
    }
  });

  it("says a drop or invalidate event ended its stream when its collection is dropped", async () => {
    const prefix = freshPrefix();
    const logger = capturingLogger();
    const watcher = storeOn(prefix, { logger });
    const watch = startWatch(watcher, BG);
    try {
      await eventually(() => watcher.chunkStreamsOpen === 1);
      await mongo.db.collection(`${prefix}stream_chunks`).drop();
      await eventually(() => logger.lines.some((l) => l.message === REOPENING));
      expect(logger.lines.find((l) => l.message === REOPENING)?.fields).toMatchObject({
        // The server sends "drop" then "invalidate"; the stream ends at whichever it reads first.
        reason: expect.stringMatching(
          /^"(drop|invalidate)" event \(the watched collection was dropped or renamed, or its database dropped\)$/,
        ),
        resume: false,
      });
    } finally {
      await watch.stop();
    }
  });

  it("keeps retrying, and does not end, while the server cannot be reached", async () => {
    const logger = capturingLogger();
    const port = await freePort(); // nothing listens on it
    const store = new MongoSessionStore<CounterState>({
      uri: `mongodb://127.0.0.1:${port}/?directConnection=true&serverSelectionTimeoutMS=200`,
      database: DATABASE,
      collectionPrefix: freshPrefix(),
      logger,
    });
    const watch = startWatch(store, BG);
    let ended = false;
    void watch.ended.then(
      () => (ended = true),
      () => (ended = true),
    );
    try {
      await eventually(() => logger.lines.some((l) => l.message === OPEN_FAILED));
      await sleep(1_000); // a few more attempts
      expect(ended).toBe(false);
    } finally {
      await watch.stop();
      await store.close();
    }
  });
});
