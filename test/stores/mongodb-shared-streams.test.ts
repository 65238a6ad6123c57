import { describe, expect, it } from "vitest";
import { chunk } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import { commandLog, freshPrefix, useMongoServer, type CommandLog } from "./mongodb-fixtures.js";
import { eventually } from "./snapshot-factory.js";

// Issue 37: one change stream per store instance serves every chunk watcher, and the reads the
// many watchers and followers of one log need are sent once (gapless catch-up: mongodb-gapless.test.ts).

const DATABASE = "agentd_shared_streams";
const mongo = useMongoServer(DATABASE);
const storeOn = mongo.storeOn;
const monitored = { clientOptions: { monitorCommands: true } };

/** The change-stream aggregates sent on the chunk collection. */
function chunkStreamsOpened(log: CommandLog, prefix: string): number {
  return log
    .named("aggregate")
    .filter((e) => e.command.aggregate === `${prefix}stream_chunks`)
    .filter((e) => (e.command.pipeline as Record<string, unknown>[])[0]?.$changeStream !== undefined).length;
}

/** The finds sent on the chunk collection for one log. */
function findsOf(log: CommandLog, prefix: string, snapshotId: string): Record<string, unknown>[] {
  return log
    .named("find")
    .filter((e) => e.command.find === `${prefix}stream_chunks`)
    .filter((e) => (e.command.filter as { snapshotId?: unknown }).snapshotId === snapshotId)
    .map((e) => e.command);
}

describe("mongodb chunk watchers: one change stream per store instance", () => {
  it("serves 40 watchers of 8 logs from one change stream, waking each for its own log", async () => {
    const prefix = freshPrefix();
    const watcher = storeOn(prefix, monitored);
    const writer = storeOn(prefix);
    await watcher.ready();
    const log = commandLog(watcher);
    const keys = Array.from({ length: 8 }, (_, i) => ({ sessionId: `s${i}`, snapshotId: `bg${i}` }));
    const watches = keys.flatMap((key) => Array.from({ length: 5 }, () => startWatch(watcher, key)));
    try {
      await eventually(() => watcher.chunkStreamsOpen === 40);
      for (const key of keys) await writer.appendChunks(key, [chunk(1)], Date.now() + HOUR);
      await Promise.all(watches.map((watch) => watch.untilWakes(1)));
      expect(watches.map((watch) => watch.wakes)).toEqual(watches.map(() => 1));
      expect(chunkStreamsOpened(log, prefix)).toBe(1);
    } finally {
      await Promise.all(watches.map((watch) => watch.stop()));
    }
  });

  it("closes its change stream when the last watcher leaves and opens one again for the next", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, monitored);
    await store.ready();
    const log = commandLog(store);
    const first = startWatch(store, { sessionId: "s1", snapshotId: "bg" });
    await eventually(() => store.chunkStreamsOpen === 1);
    await first.stop();
    await eventually(() => store.chunkWatcherCount === 0);
    const second = startWatch(store, { sessionId: "s1", snapshotId: "bg" });
    try {
      await eventually(() => store.chunkStreamsOpen === 1);
      expect(chunkStreamsOpened(log, prefix)).toBe(2);
    } finally {
      await second.stop();
    }
  });

  it("reads a log's highest sequence once for 20 watchers started together, and once after its stream opens", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, monitored);
    await store.appendChunks({ sessionId: "s1", snapshotId: "bg" }, [chunk(1)], Date.now() + HOUR);
    const log = commandLog(store);
    const watches = Array.from({ length: 20 }, () => startWatch(store, { sessionId: "s1", snapshotId: "bg" }));
    try {
      await eventually(() => store.chunkStreamsOpen === 20);
      expect(findsOf(log, prefix, "bg")).toHaveLength(2);
    } finally {
      await Promise.all(watches.map((watch) => watch.stop()));
    }
  });

  it("sends one chunk read for 20 followers reading the same chunks at once", async () => {
    const prefix = freshPrefix();
    const store = storeOn(prefix, monitored);
    const key = { sessionId: "s1", snapshotId: "bg" };
    await store.appendChunks(key, [chunk(1), chunk(2)], Date.now() + HOUR);
    const log = commandLog(store);
    const reads = await Promise.all(Array.from({ length: 20 }, () => store.readChunks(key, 0, 100)));
    expect(reads).toEqual(reads.map(() => [chunk(1), chunk(2)]));
    expect(findsOf(log, prefix, "bg")).toHaveLength(1);
  });
});
