import { Long, MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MongoSessionStore, type MongoSessionStoreConfig } from "../../stores/mongodb/mongo-store.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { ResettingProxy } from "../harness/resetting-proxy.js";
import {
  adminCommand,
  capturingLogger,
  closeChangeStreamCursors,
  commandLog,
  freshPrefix,
} from "./mongodb-fixtures.js";
import { commitRecord, eventually, pendingRecord, sleep, type CounterState } from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

// How the status change stream survives every way a real server ends it. mongo-java-server's test
// backend (test/mongo-java-server) ends streams as a real replica set does: an invalidate event and
// cursor ID 0 after a drop or rename, cursor ID 0 without an event (test hook), BSONObjectTooLarge
// for an oversized event and for every stream resumed from before it (test hook).
const DATABASE = "agentd_streams";

let server: MongoJavaServer;
let raw: MongoClient;
let db: Db;
beforeAll(async () => {
  server = await MongoJavaServer.start();
  raw = new MongoClient(server.uri);
  db = raw.db(DATABASE);
}, 300_000);
afterAll(async () => {
  await raw?.close();
  await server?.stop();
});

type Store = MongoSessionStore<CounterState>;

function store(prefix: string, extra: Partial<MongoSessionStoreConfig> = {}): Store {
  return new MongoSessionStore<CounterState>({
    uri: server.uri,
    database: DATABASE,
    collectionPrefix: prefix,
    ...extra,
  });
}

type WatchedRow = Awaited<ReturnType<typeof openWatchedRow>>;

/** Runs `body` on a watched row, then closes both instances (also when `body` fails). */
async function withWatchedRow(
  body: (row: WatchedRow) => Promise<void>,
  extra: Partial<MongoSessionStoreConfig> = {},
): Promise<void> {
  const row = await openWatchedRow(extra);
  try {
    await body(row);
  } finally {
    await row.close();
  }
}

/** A watcher subscribed to the pending row `bg` (its stream established) and a second instance writing. */
async function openWatchedRow(extra: Partial<MongoSessionStoreConfig> = {}) {
  const prefix = freshPrefix();
  const logger = capturingLogger();
  const watcher = store(prefix, { logger, ...extra });
  const writer = store(prefix);
  await commitRecord(writer, undefined, pendingRecord("s1", "bg"));
  const recorder = recordStatuses(watcher, "bg");
  await eventually(() => recorder.seen.length === 1 && watcher.changeStreamOpen);
  const close = async (): Promise<void> => {
    await recorder.stop();
    await Promise.all([watcher.close(), writer.close()]);
  };
  return { prefix, logger, watcher, writer, seen: recorder.seen, close };
}

describe("mongodb status stream: reopening", () => {
  it("reopens after the snapshots collection is dropped (drop + invalidate) and delivers later status changes", async () => {
    await withWatchedRow(async ({ prefix, logger, watcher, writer, seen }) => {
      await db.collection(`${prefix}snapshots`).drop();
      await eventually(() => watcher.changeStreamReopens === 1 && watcher.changeStreamOpen);
      expect(watcher.changeStreamLastEnding).toMatchObject({
        resume: false,
        reason: expect.stringMatching(/"(drop|invalidate)" event/),
      });
      expect(logger.lines.map((l) => l.message)).toEqual([
        "MongoDB change stream ended; reopening it",
        "MongoDB change stream reopened; re-reading the subscribed snapshots",
      ]);
      expect(logger.lines[0]!.fields).toEqual({
        reason: watcher.changeStreamLastEnding!.reason,
        resume: false,
        subscribed: 1,
      });
      expect(logger.lines[1]!.fields).toMatchObject({ reopens: 1, resumed: false, rereading: 1 });
      // The row is written again (as a restore would) and aborted: both reach the subscriber.
      await commitRecord(writer, undefined, pendingRecord("s2", "bg"));
      await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => seen.length === 2);
      expect(seen).toEqual(["pending", "aborted"]);
    });
  });

  it("reopens after the snapshots collection is renamed away and delivers later status changes", async () => {
    await withWatchedRow(async ({ prefix, watcher, writer, seen }) => {
      await raw
        .db("admin")
        .command({ renameCollection: `${DATABASE}.${prefix}snapshots`, to: `${DATABASE}.${prefix}snapshots_old` });
      await eventually(() => watcher.changeStreamReopens === 1 && watcher.changeStreamOpen);
      expect(watcher.changeStreamLastEnding?.reason).toMatch(/"(rename|invalidate)" event/);
      await commitRecord(writer, undefined, pendingRecord("s2", "bg"));
      await writer.updateRecord("bg", (e) => ({ ...e, status: "completed" }));
      await eventually(() => seen.length === 2);
      expect(seen).toEqual(["pending", "completed"]);
    });
  });

  it("reopens when the server closes the cursor without an event (tryNext would return null for ever)", async () => {
    await withWatchedRow(async ({ watcher, writer, seen }) => {
      let reopensBefore = 0;
      const closed = await closeChangeStreamCursors(
        server.uri,
        () => watcher.changeStreamOpen,
        () => (reopensBefore = watcher.changeStreamReopens),
      );
      expect(closed).toBe(1);
      await eventually(() => watcher.changeStreamReopens === reopensBefore + 1 && watcher.changeStreamOpen);
      expect(watcher.changeStreamLastEnding).toMatchObject({
        resume: false,
        reason: "the server closed the change stream's cursor",
      });
      await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => seen.length === 2);
      expect(seen).toEqual(["pending", "aborted"]);
    });
  });

  it("still delivers after its cursor is killed on the server (killCursors from another client): the driver's resume counts as a reopen", async () => {
    await withWatchedRow(
      async ({ prefix, logger, watcher, writer, seen }) => {
        const log = commandLog(watcher);
        await eventually(() => log.succeeded.some((e) => e.commandName === "getMore"));
        const cursorId = (log.succeeded.find((e) => e.commandName === "getMore")!.reply as { cursor: { id: unknown } })
          .cursor.id;
        const id = typeof cursorId === "number" ? Long.fromNumber(cursorId) : cursorId; // cursor IDs are int64 on the wire
        const killed = await db.command({ killCursors: `${prefix}snapshots`, cursors: [id] });
        expect(killed.cursorsKilled).toHaveLength(1);
        // Written before the stream's next getMore: mongo-java-server sends no post-batch resume token, so the
        // driver resumes from "now" and only the re-read after its resume can deliver this change.
        await writer.updateRecord("bg", (e) => ({ ...e, status: "failed" }));
        await eventually(() => seen.length === 2);
        expect(seen).toEqual(["pending", "failed"]);
        expect(watcher.changeStreamReopens).toBe(1);
        expect(logger.lines).toEqual([
          {
            message: "MongoDB change stream resumed by the driver after an error; re-reading the subscribed snapshots",
            fields: { reopens: 1, resumed: false, rereading: 1 }, // no event yet, so no resume token of its own
          },
        ]);
      },
      { clientOptions: { monitorCommands: true } },
    );
  });

  it("reopens from now, not from its resume token, after an oversized event (BSONObjectTooLarge, 10334)", async () => {
    await withWatchedRow(async ({ logger, watcher, writer, seen }) => {
      // An event (a new pending row) gives the stream a resume token before the oversized event.
      await commitRecord(writer, undefined, pendingRecord("s3", "other"));
      await eventually(() => watcher.changeEventsReceived === 1);
      // Every stream resumed from a token before the oversized event fails again, as on a real server.
      expect(await adminCommand(server.uri, { agentdTestOversizedChangeEvent: 1 })).toMatchObject({ poisoned: 1 });
      await eventually(() => watcher.changeStreamReopens === 1 && watcher.changeStreamOpen);
      expect(watcher.changeStreamLastEnding).toMatchObject({
        code: 10334,
        resume: false,
        reason: expect.stringMatching(/16 MiB/),
      });
      expect(logger.lines[0]).toEqual({
        message: "MongoDB change stream ended; reopening it",
        fields: { reason: expect.stringMatching(/16 MiB/), resume: false, code: 10334, subscribed: 1 },
      });
      await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => seen.length === 2);
      expect(seen).toEqual(["pending", "aborted"]);
      await sleep(300);
      expect(watcher.changeStreamReopens).toBe(1); // no reopen loop
    });
  });
});

describe("mongodb status stream: reconnects", () => {
  const proxy = new ResettingProxy();
  beforeAll(async () => {
    await proxy.start(server.port);
  });
  afterAll(async () => {
    await proxy.close();
  });

  it(
    "re-reads each subscribed record at most once per reconnect (connection-pool events cause no read storm)",
    { timeout: 60_000 },
    async () => {
      const prefix = freshPrefix();
      const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true&serverSelectionTimeoutMS=5000`;
      const watcher = new MongoSessionStore<CounterState>({
        uri,
        database: DATABASE,
        collectionPrefix: prefix,
        clientOptions: { monitorCommands: true },
      });
      const writer = store(prefix);
      const ids = ["r0", "r1", "r2", "r3"];
      let head = await commitRecord(writer, undefined, pendingRecord("s1", "r0"));
      for (const id of ids.slice(1)) head = await commitRecord(writer, head, pendingRecord("s1", id));
      const recorders = ids.map((id) => recordStatuses(watcher, id));
      await eventually(() => watcher.changeStreamOpen && recorders.every((r) => r.seen.length === 1));
      const log = commandLog(watcher);
      await sleep(200);
      const statusReads = (): number =>
        log
          .named("find")
          .filter((e) => JSON.stringify(e.command.projection) === JSON.stringify({ status: 1, version: 1 })).length;
      log.clear();
      const resets = 3;
      for (let i = 1; i <= resets; i++) {
        proxy.reset();
        await eventually(() => watcher.changeStreamReopens >= i && watcher.changeStreamOpen, 20_000);
        await sleep(500);
      }
      await sleep(3_500); // room for any delayed re-read
      expect(watcher.changeStreamReopens).toBe(resets);
      expect(statusReads()).toBeLessThanOrEqual(ids.length * resets);
      expect(statusReads()).toBeGreaterThanOrEqual(ids.length); // it did re-read after reconnecting
      // The stream still works.
      await writer.updateRecord("r2", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => recorders[2]!.seen.length === 2);
      await Promise.all(recorders.map((r) => r.stop()));
      expect(recorders.map((r) => r.seen)).toEqual([["pending"], ["pending"], ["pending", "aborted"], ["pending"]]);
      await Promise.all([watcher.close(), writer.close()]);
    },
  );
});
