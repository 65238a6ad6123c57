import type { Timestamp } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoSessionStore, type MongoSessionStoreConfig } from "../../stores/mongodb/mongo-store.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { chunk } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import { commandLog, freshPrefix, holdStreamOpening, watchBaselinesRead, type CommandLog } from "./mongodb-fixtures.js";
import {
  checkpointRecord,
  commitOf,
  commitRecord,
  eventually,
  pendingRecord,
  type CounterState,
} from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

// Issue 37 item 3: after a change stream opens (or reopens), the store re-reads what it watches at
// a time no earlier than the stream's start (readConcern.afterClusterTime = the operationTime of the
// stream's aggregate), so a change between "the stream started" and "the re-read" is in one or the
// other. Runs on mongo-java-server as a replica set (which answers a change stream's aggregate with
// its operationTime, but has no sessions: there the re-read carries no afterClusterTime and only its
// order is checked) and, when MONGODB_URI is set, on that real replica set (afterClusterTime checked).

const DATABASE = "agentd_gapless";
type Store = MongoSessionStore<CounterState>;

/** The operationTime of the change-stream aggregate the store sent on `collection`, and the finds it then sent there. */
function streamStartAndReads(
  log: CommandLog,
  collection: string,
): { start?: Timestamp; reads: Record<string, unknown>[] } {
  const aggregates = log.started.filter((e) => e.commandName === "aggregate" && e.command.aggregate === collection);
  const opened = log.succeeded.find((e) => e.requestId === aggregates[0]?.requestId);
  const start = (opened?.reply as { operationTime?: Timestamp } | undefined)?.operationTime;
  const reads = log.started
    .filter(
      (e) => e.commandName === "find" && e.command.find === collection && e.requestId > (aggregates[0]?.requestId ?? 0),
    )
    .map((e) => e.command);
  return { ...(start ? { start } : {}), reads };
}

function afterClusterTimeOf(command: Record<string, unknown> | undefined): string | undefined {
  return (command?.readConcern as { afterClusterTime?: Timestamp } | undefined)?.afterClusterTime?.toString();
}

function registerGaplessSuite(name: string, uri: () => string, database: string, sessions: boolean): void {
  describe(name, () => {
    const open = (prefix: string, extra: Partial<MongoSessionStoreConfig> = {}): Store =>
      new MongoSessionStore<CounterState>({
        uri: uri(),
        database,
        collectionPrefix: prefix,
        clientOptions: { monitorCommands: true },
        ...extra,
      });
    const stores: Store[] = [];
    afterAll(async () => {
      await Promise.all(stores.map((s) => s.close()));
    });
    const tracked = (s: Store): Store => (stores.push(s), s);

    it("re-reads a chunk watcher's log at the chunk stream's start (afterClusterTime)", async () => {
      const prefix = freshPrefix();
      const store = tracked(open(prefix));
      await store.ready();
      const log = commandLog(store);
      const watch = startWatch(store, { sessionId: "s1", snapshotId: "bg" });
      try {
        await eventually(() => store.chunkStreamsOpen === 1, 20_000);
        const { start, reads } = streamStartAndReads(log, `${prefix}stream_chunks`);
        expect(start).toBeDefined();
        expect(reads.length).toBeGreaterThan(0);
        // mongo-java-server has no sessions (so no afterClusterTime): there the read only follows the open.
        if (sessions) expect(afterClusterTimeOf(reads[0])).toBe(start!.toString());
      } finally {
        await watch.stop();
      }
    });

    it("re-reads a status subscriber's record at the status stream's start (afterClusterTime)", async () => {
      const prefix = freshPrefix();
      const store = tracked(open(prefix));
      const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
      await store.commit(commitOf(head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1 })));
      const log = commandLog(store);
      const statuses = recordStatuses(store, "bg");
      try {
        await eventually(() => store.changeStreamOpen, 20_000);
        const { start, reads } = streamStartAndReads(log, `${prefix}snapshots`);
        expect(start).toBeDefined();
        expect(reads.length).toBeGreaterThan(0);
        if (sessions) expect(reads.map(afterClusterTimeOf)).toContain(start!.toString());
      } finally {
        await statuses.stop();
      }
    });

    it("wakes a watcher for an append another instance made while its stream was opening", async () => {
      const prefix = freshPrefix();
      const watcher = tracked(open(prefix));
      const writer = tracked(open(prefix));
      await Promise.all([watcher.ready(), writer.ready()]);
      const key = { sessionId: "s1", snapshotId: "bg" };
      // Hold the stream's opening (the second collection() call; the first is the watch's baseline
      // read) until the other instance's append is acknowledged: the append has no event on the
      // stream, only the re-read after it opens can report it.
      const hold = holdStreamOpening(watcher, 1, 1);
      const watch = startWatch(watcher, key);
      try {
        await hold.firstHeld;
        await watchBaselinesRead(watcher, key);
        await writer.appendChunks(key, [chunk(1)], Date.now() + HOUR);
        hold.release();
        await watch.untilWakes(1, 20_000);
        expect(await watcher.readChunks(key, 0, 10)).toEqual([chunk(1)]);
      } finally {
        hold.release(); // a failure before the append leaves nothing held
        await watch.stop();
      }
    });
  });
}

let replicaSet: MongoJavaServer | undefined;
beforeAll(async () => {
  replicaSet = await MongoJavaServer.start(0, { replicaSet: "rs0" });
}, 300_000);
afterAll(async () => {
  await replicaSet?.stop();
});
registerGaplessSuite(
  "mongodb gapless re-read (mongo-java-server as a replica set)",
  () => replicaSet!.uri,
  DATABASE,
  false,
);

const REAL_SET = process.env.MONGODB_URI;
// Registered only against a real replica set (see mongodb-replica-set.test.ts).
if (REAL_SET)
  registerGaplessSuite(
    "mongodb gapless re-read on the real replica set of MONGODB_URI",
    () => REAL_SET,
    "agentd_test",
    true,
  );
