import { BSON, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import { MongoSessionStore, type MongoSessionStoreConfig } from "../../stores/mongodb/mongo-store.js";
import { encodeRecord, MAX_DOCUMENT_BYTES } from "../../stores/mongodb/record-document.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { until } from "../harness/until.js";
import { adminCommand, capturingLogger, commandLog, freshPrefix } from "./mongodb-fixtures.js";
import {
  checkpointRecord,
  commitOf,
  commitRecord,
  eventually,
  pendingRecord,
  sleep,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";
import { recordStatuses } from "./status-recorder.js";

// Failover behaviour of the MongoDB store. The first suites run on mongo-java-server, whose test
// backend answers as a replica set member does during a failover (NotWritablePrimary 10107,
// NotPrimaryNoSecondaryOk 13435, no primary in hello) and can attach write-concern errors to writes.
// The last suite runs against the real replica set of MONGODB_URI and is registered only when that
// variable is set (see docs/stores.md, "Testing against a real MongoDB").
const DATABASE = "agentd_failover";
type Store = MongoSessionStore<CounterState>;

/** The row a detached run finalizes: pending → completed, with the final turn's index. */
const finalize = (e: CounterRecord): CounterRecord | null =>
  e.status === "pending" ? { ...e, status: "completed", finishReason: "stop", updatedAt: T0 + 9 } : null;

/**
 * Waits until `store` has connected and prepared its collections. These stores wait only 300 ms or
 * 1 s for a primary per attempt and give up after two attempts that found none (the store is down):
 * a first connection to the JVM server on a loaded machine can take longer than that, so a test
 * waits for the connection before its first call that must succeed (the server is up throughout).
 */
async function connected(store: Store): Promise<Store> {
  await until("the store connects", () => store.ready().then(() => true), { timeoutMs: 60_000 });
  return store;
}

describe("mongodb store while the primary steps down (mongo-java-server)", () => {
  let standalone: MongoJavaServer;
  let replicaSet: MongoJavaServer;
  beforeAll(async () => {
    [standalone, replicaSet] = await Promise.all([
      MongoJavaServer.start(),
      MongoJavaServer.start(0, { replicaSet: "rs0" }),
    ]);
  }, 300_000);
  afterAll(async () => {
    await Promise.all([standalone?.stop(), replicaSet?.stop()]);
  });

  const open = (uri: string, extra: Partial<MongoSessionStoreConfig> = {}): Store =>
    new MongoSessionStore<CounterState>({ uri, database: DATABASE, collectionPrefix: freshPrefix(), ...extra });

  it("answers UNAVAILABLE (not INTERNAL) for the not-primary errors of a stepped-down node", async () => {
    const store = open(standalone.uri, { failoverWindowMs: 0 });
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await adminCommand(standalone.uri, { agentdTestStepDown: 1, ms: 3_000 });
    const write = await store
      .commit(commitOf(head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1 })))
      .catch((e: unknown) => e);
    expect(write).toMatchObject({ status: "UNAVAILABLE", cause: { code: 10107, codeName: "NotWritablePrimary" } });
    const read = await store.getHead("s1").catch((e: unknown) => e);
    expect(read).toMatchObject({ status: "UNAVAILABLE", cause: { code: 13435 } });
    await sleep(3_100);
    expect(await store.getHead("s1")).toEqual(head);
    await store.close();
  });

  it(
    "retries a detached run's final write across the failover window until a primary is back",
    // The safety net outlasts the store's 30 s failover window.
    { timeout: 60_000 },
    async () => {
      const prefix = freshPrefix();
      const store = await connected(
        open(replicaSet.uri.replace(/serverSelectionTimeoutMS=\d+/, "serverSelectionTimeoutMS=300"), {
          collectionPrefix: prefix,
        }),
      );
      const watcher = open(replicaSet.uri, { collectionPrefix: prefix });
      await commitRecord(store, undefined, pendingRecord("s1", "bg"));
      const watch = recordStatuses(watcher, "bg");
      await eventually(() => watch.seen.length === 1 && watcher.changeStreamOpen);
      await adminCommand(replicaSet.uri, { agentdTestStepDown: 1, ms: 2_000 });
      const started = Date.now();
      const row = await store.updateRecord("bg", finalize);
      expect(row?.status).toBe("completed");
      expect(Date.now() - started).toBeGreaterThan(1_000); // it did wait for the new primary
      expect((await store.getRecord("bg"))?.status).toBe("completed");
      await eventually(() => watch.seen.length === 2);
      expect(watch.seen).toEqual(["pending", "completed"]);
      await watch.stop();
      await Promise.all([store.close(), watcher.close()]);
    },
  );

  it("fails UNAVAILABLE when the window is shorter than the election", async () => {
    const uri = replicaSet.uri.replace(/serverSelectionTimeoutMS=\d+/, "serverSelectionTimeoutMS=300");
    const store = await connected(open(uri, { failoverWindowMs: 0 }));
    await commitRecord(store, undefined, pendingRecord("s1", "bg"));
    await adminCommand(replicaSet.uri, { agentdTestStepDown: 1, ms: 1_500 });
    await expect(store.updateRecord("bg", finalize)).rejects.toMatchObject({ status: "UNAVAILABLE" });
    await sleep(1_600);
    await store.close();
  });

  it("loses no acknowledged turn when the primary steps down during a save loop", { timeout: 60_000 }, async () => {
    const uri = replicaSet.uri.replace(/serverSelectionTimeoutMS=\d+/, "serverSelectionTimeoutMS=1000");
    await saveLoopAcrossStepDown(
      (prefix) => open(uri, { collectionPrefix: prefix, failoverWindowMs: 0 }),
      () => adminCommand(replicaSet.uri, { replSetStepDown: 3 }),
      true,
    );
  });

  it(
    "commits and reads across a step-down within the failover window (no call fails)",
    { timeout: 60_000 },
    async () => {
      const uri = replicaSet.uri.replace(/serverSelectionTimeoutMS=\d+/, "serverSelectionTimeoutMS=1000");
      const waited = await commitAcrossStepDown(open(uri), () =>
        adminCommand(replicaSet.uri, { agentdTestStepDown: 1, ms: 2_500 }),
      );
      expect(waited).toBeGreaterThan(1_500); // the calls did wait for the primary to come back
    },
  );

  it("stops retrying a call across a step-down at the caller's deadline", async () => {
    // Each attempt waits at most 1 s for a primary; without the deadline the calls would retry for 2-3 s.
    const store = await connected(
      open(replicaSet.uri.replace(/serverSelectionTimeoutMS=\d+/, "serverSelectionTimeoutMS=1000")),
    );
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await adminCommand(replicaSet.uri, { agentdTestStepDown: 1, ms: 4_000 });
    // Beside them, the same read without a deadline (its second attempt after the first finds no
    // primary): the calls with a deadline stop after their first attempt, so they settle first,
    // however slow the machine (an order of events, not a time).
    const settled: string[] = [];
    const settle = (name: string, call: Promise<unknown>): Promise<unknown> =>
      call.catch((e: unknown) => e).finally(() => settled.push(name));
    const ctx = { deadline: Date.now() + 300 };
    const write = settle("write", store.commit(commitOf(head, commitRecordOf("s1", "t1", "root")), ctx));
    const read = settle("read", store.getHead("s1", ctx));
    const undeadlined = settle("read without a deadline", store.getHead("s1"));
    expect(await write).toMatchObject({ status: "UNAVAILABLE" });
    expect(await read).toMatchObject({ status: "UNAVAILABLE" });
    await undeadlined;
    expect(settled.at(-1)).toBe("read without a deadline");
    await sleep(4_100);
    expect(await store.getHead("s1")).toEqual(head); // the failed commit left the head alone
    expect(await store.getRecord("t1")).toBeUndefined();
    await store.close();
  });

  it(
    "reports no commit that landed as failed, and shows no record of one that did not, across a step-down",
    { timeout: 60_000 },
    async () => {
      const uri = replicaSet.uri.replace(/serverSelectionTimeoutMS=\d+/, "serverSelectionTimeoutMS=1000");
      await exactlyOnceAcrossStepDown(
        (prefix) => open(uri, { collectionPrefix: prefix, failoverWindowMs: 500 }),
        () => adminCommand(replicaSet.uri, { replSetStepDown: 3 }),
      );
    },
  );

  it("answers a commit whose writes landed but got write-concern errors (WriteConcernFailed, 64) as committed, and does not apply an update twice when only its acknowledgement failed", async () => {
    const store = open(standalone.uri);
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    await adminCommand(standalone.uri, { agentdTestWriteConcernError: 1, count: 2, code: 64 });
    const commit = await store.commit(commitOf(head, pendingRecord("s1", "bg", { parentId: "root", turnIndex: 1 })));
    expect(commit).toMatchObject({ headSnapshotId: "bg", version: head.version + 1 });
    expect((await store.getRecord("bg"))?.status).toBe("pending");
    // The update is applied, its acknowledgement fails; the retry recognises its own write.
    await adminCommand(standalone.uri, { agentdTestWriteConcernError: 1, count: 1, code: 64 });
    const increment = (e: CounterRecord): CounterRecord => ({
      ...e,
      checkpoint: { ...e.checkpoint!, custom: { n: e.checkpoint!.custom!.n + 1 } },
    });
    const updated = await store.updateRecord("root", increment);
    expect(updated?.checkpoint?.custom).toEqual({ n: 1 });
    expect((await store.getRecord("root"))?.checkpoint?.custom).toEqual({ n: 1 });
    await store.close();
  });
});

/**
 * Commits 150 turns on one session (each on top of the last acknowledged one),
 * stepping the primary down at turn 30; a commit that fails UNAVAILABLE is
 * retried from what is stored (its outcome is unknown). Then every
 * acknowledged turn must be readable through a new client, and the head must
 * be the last of them.
 */
async function saveLoopAcrossStepDown(
  open: (prefix: string) => Store,
  stepDown: () => Promise<unknown>,
  expectInterruption: boolean,
): Promise<void> {
  const prefix = freshPrefix();
  const store = await connected(open(prefix));
  const acknowledged: string[] = [];
  const failures: string[] = [];
  let head: SessionHead | undefined = await commitRecord(store, undefined, checkpointRecord("s1", "t0000"));
  acknowledged.push("t0000");
  const deadline = Date.now() + 90_000;
  for (let t = 1; t <= 150 && Date.now() < deadline; t++) {
    // The old primary may close connections while it steps down: the command's own answer may be an error.
    if (t === 30) await stepDown().catch(() => undefined);
    const id = `t${String(t).padStart(4, "0")}`;
    const record = checkpointRecord("s1", id, {
      parentId: acknowledged.at(-1)!,
      turnIndex: t,
      createdAt: T0 + t,
      checkpoint: { sessionId: "s1", messages: [], artifacts: [], custom: { n: t } },
    });
    for (;;) {
      try {
        head = await store.commit(commitOf(head, record));
        if (!head) throw new Error(`commit ${id} conflicted`);
        acknowledged.push(id);
        break;
      } catch (err) {
        const status = (err as { status?: string }).status;
        if (status !== "UNAVAILABLE" && status !== "ALREADY_EXISTS") throw err;
        failures.push(status);
        await sleep(200);
        // Outcome unknown: continue from what is stored (the record may be there, the head may have moved).
        head = await store.getHead("s1").catch(() => head);
        if (head?.headSnapshotId === id) {
          acknowledged.push(id);
          break;
        }
        if ((await store.getRecord(id).catch(() => undefined)) !== undefined) break; // inserted, head not moved: skip it
      }
    }
  }
  // With no other member to elect the loop must have waited out the step-down (a real set with secondaries
  // may elect a new primary fast enough for the driver's own retry to hide it).
  if (expectInterruption) expect(failures.length).toBeGreaterThan(0);
  const reader = await connected(open(prefix));
  for (const id of acknowledged) expect([id, (await reader.getRecord(id))?.snapshotId]).toEqual([id, id]);
  expect((await reader.getHead("s1"))?.headSnapshotId).toBe(acknowledged.at(-1));
  expect(acknowledged.length).toBeGreaterThan(100);
  await Promise.all([store.close(), reader.close()]);
}

/** A delta turn `id` on `parentId` (a commit of the save loop). */
function commitRecordOf(sessionId: string, id: string, parentId: string): CounterRecord {
  return checkpointRecord(sessionId, id, { parentId, turnIndex: 1, createdAt: T0 + 1 });
}

/**
 * Steps the primary down, then commits a turn and reads it back while no
 * primary is there: both calls wait out the election inside the store (no
 * error reaches the caller) and the turn is stored once.
 */
async function commitAcrossStepDown(store: Store, stepDown: () => Promise<unknown>): Promise<number> {
  await connected(store);
  const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
  await stepDown().catch(() => undefined);
  const started = Date.now();
  const committed = await store.commit(commitOf(head, commitRecordOf("s1", "t1", "root")));
  expect(committed).toMatchObject({ headSnapshotId: "t1", version: head.version + 1 });
  expect((await store.getHead("s1"))?.headSnapshotId).toBe("t1");
  expect((await store.getRecord("t1"))?.snapshotId).toBe("t1");
  expect((await store.listRecords("s1")).records.map((r) => r.snapshotId)).toEqual(["t1", "root"]);
  await store.close();
  return Date.now() - started;
}

/**
 * Commits 80 turns on one session, stepping the primary down at turn 20. A
 * commit that fails (UNAVAILABLE) must be one that did not land: the head
 * did not move to it and its record is invisible; the turn is then retried
 * under a new snapshot ID. At the end the session's visible records are
 * exactly the acknowledged turns, each turn once, and the head is the last.
 */
async function exactlyOnceAcrossStepDown(
  open: (prefix: string) => Store,
  stepDown: () => Promise<unknown>,
): Promise<void> {
  const prefix = freshPrefix();
  const store = await connected(open(prefix));
  const acknowledged: string[] = [];
  let head: SessionHead | undefined = await commitRecord(store, undefined, checkpointRecord("s1", "t00-0"));
  acknowledged.push("t00-0");
  const deadline = Date.now() + 90_000;
  for (let t = 1; t <= 80 && Date.now() < deadline; t++) {
    if (t === 20) await stepDown().catch(() => undefined);
    for (let attempt = 0; ; attempt++) {
      const id = `t${String(t).padStart(2, "0")}-${attempt}`;
      const record = checkpointRecord("s1", id, { parentId: acknowledged.at(-1)!, turnIndex: t, createdAt: T0 + t });
      try {
        head = await store.commit(commitOf(head, record));
        if (!head) throw new Error(`commit ${id} conflicted`);
        acknowledged.push(id);
        break;
      } catch (err) {
        if ((err as { status?: string }).status !== "UNAVAILABLE" || attempt > 50) throw err;
        await sleep(200);
        const now = await store.getHead("s1").catch(() => undefined);
        if (!now) continue; // still no primary
        expect(now.headSnapshotId).not.toBe(id); // a failed commit never moved the head
        expect(await store.getRecord(id)).toBeUndefined();
        head = now;
      }
    }
  }
  const reader = await connected(open(prefix));
  const visible: string[] = [];
  for (let page: string | undefined, first = true; first || page; first = false) {
    const got = await reader.listRecords("s1", {
      pageSize: 1000,
      includeState: false,
      ...(page ? { pageToken: page } : {}),
    });
    visible.push(...got.records.map((r) => r.snapshotId));
    page = got.nextPageToken;
  }
  expect(visible.sort()).toEqual([...acknowledged].sort());
  expect((await reader.getHead("s1"))?.headSnapshotId).toBe(acknowledged.at(-1));
  await Promise.all([store.close(), reader.close()]);
}

const REAL_SET = process.env.MONGODB_URI;
// Registered only against a real replica set: without MONGODB_URI these tests do not exist (they are
// not skipped and never counted as passed).
if (REAL_SET) registerRealReplicaSetSuite(REAL_SET);

/** `uri` with query option `name=value` added. */
function withOption(uri: string, name: string, value: string): string {
  return `${uri}${uri.includes("?") ? "&" : "?"}${name}=${value}`;
}

function registerRealReplicaSetSuite(uri: string): void {
  describe("mongodb store on the real replica set of MONGODB_URI", () => {
    let raw: MongoClient;
    let members: { primary: string; secondaries: string[] };
    beforeAll(async () => {
      raw = new MongoClient(uri);
      const hello = await raw.db("admin").command({ hello: 1 });
      if (!hello.setName) throw new Error(`MONGODB_URI must name a replica set (hello has no setName): ${uri}`);
      members = {
        primary: String(hello.primary),
        secondaries: (hello.hosts as string[]).filter((h) => h !== hello.primary),
      };
    });
    afterAll(async () => {
      await raw?.close();
    });

    const open = (extra: Partial<MongoSessionStoreConfig> = {}, prefix = freshPrefix()): Store =>
      new MongoSessionStore<CounterState>({ uri, database: "agentd_test", collectionPrefix: prefix, ...extra });

    it("commits and reads across a step-down (no call fails)", { timeout: 180_000 }, async () => {
      const stepDown = { replSetStepDown: 10, secondaryCatchUpPeriodSecs: 5, force: members.secondaries.length === 0 };
      await commitAcrossStepDown(open(), () => raw.db("admin").command(stepDown));
    });

    it("loses no acknowledged turn when the primary steps down during a save loop", { timeout: 180_000 }, async () => {
      const stepDown = { replSetStepDown: 10, secondaryCatchUpPeriodSecs: 5, force: members.secondaries.length === 0 };
      await saveLoopAcrossStepDown(
        (prefix) => open({}, prefix),
        () => raw.db("admin").command(stepDown),
        false,
      );
    });

    it(
      "reports no commit that landed as failed, and shows no record of one that did not, across a step-down",
      { timeout: 180_000 },
      async () => {
        const stepDown = {
          replSetStepDown: 10,
          secondaryCatchUpPeriodSecs: 5,
          force: members.secondaries.length === 0,
        };
        await exactlyOnceAcrossStepDown(
          (prefix) => open({}, prefix),
          () => raw.db("admin").command(stepDown),
        );
      },
    );

    for (const [what, change] of [
      ["dropped", async (prefix: string) => raw.db("agentd_test").collection(`${prefix}snapshots`).drop()],
      [
        "renamed",
        async (prefix: string) =>
          raw
            .db("admin")
            .command({ renameCollection: `agentd_test.${prefix}snapshots`, to: `agentd_test.${prefix}snapshots_old` }),
      ],
    ] as const) {
      it(
        `reopens its change stream when the snapshots collection is ${what} while subscribed`,
        { timeout: 60_000 },
        async () => {
          const prefix = freshPrefix();
          const logger = capturingLogger();
          const watcher = open({ logger }, prefix);
          const writer = open({}, prefix);
          await commitRecord(writer, undefined, pendingRecord("s1", "bg"));
          const watch = recordStatuses(watcher, "bg");
          await eventually(() => watch.seen.length === 1 && watcher.changeStreamOpen);
          await change(prefix);
          await eventually(() => watcher.changeStreamReopens >= 1 && watcher.changeStreamOpen, 20_000);
          await commitRecord(writer, undefined, pendingRecord("s2", "bg"));
          await writer.updateRecord("bg", (e) => ({ ...e, status: "aborted" }));
          await eventually(() => watch.seen.length === 2, 20_000);
          expect(watch.seen).toEqual(["pending", "aborted"]);
          expect(logger.lines.some((l) => l.message.includes("reopened"))).toBe(true);
          await watch.stop();
          await Promise.all([watcher.close(), writer.close()]);
        },
      );
    }

    it(
      "overrides readPreference=secondary from the URI (with a warning): every read goes to the primary",
      { timeout: 60_000 },
      async () => {
        if (members.secondaries.length === 0)
          throw new Error(
            "this test needs a replica set with at least one secondary (MONGODB_URI names a one-member set)",
          );
        const store = new MongoSessionStore<CounterState>({
          uri: withOption(uri, "readPreference", "secondary"),
          database: "agentd_test",
          collectionPrefix: freshPrefix(),
          clientOptions: { monitorCommands: true },
        });
        expect(store.warnings.join("\n")).toMatch(/readPreference=secondary/);
        const log = commandLog(store);
        const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
        await eventually(async () => (await store.getHead("s1"))?.version === head.version, 20_000);
        const finds = log.named("find");
        expect(finds.length).toBeGreaterThan(0);
        for (const e of finds) expect(e.address).toBe(members.primary);
        for (const e of log.named("insert", "update")) expect(e.address).toBe(members.primary);
        await store.close();
      },
    );

    it("keeps delivering after a change event over 16 MiB", { timeout: 120_000 }, async () => {
      const prefix = freshPrefix();
      const watcher = open({}, prefix);
      const writer = open({}, prefix);
      let head = await commitRecord(writer, undefined, checkpointRecord("s1", "root"));
      head = await commitRecord(
        writer,
        head,
        pendingRecord("s1", "big", { parentId: "root", turnIndex: 1, createdAt: T0 + 1, checkpointTurn: 0 }),
      );
      await commitRecord(
        writer,
        head,
        pendingRecord("s1", "next", { parentId: "root", turnIndex: 1, createdAt: T0 + 2, checkpointTurn: 0 }),
      );
      const big = recordStatuses(watcher, "big");
      const next = recordStatuses(watcher, "next");
      await eventually(() => big.seen.length === 1 && next.seen.length === 1 && watcher.changeStreamOpen);
      // A final row just under 16 MiB: its update event (all changed fields plus the event's own) is over 16 MiB.
      const finalRow =
        (text: string) =>
        (e: CounterRecord): CounterRecord => ({
          ...e,
          status: "completed",
          delta: { keepMessages: 0, appendMessages: [userText(text)] },
          depth: 1,
          deltaBytes: text.length,
        });
      const probe = (await writer.getRecord("big"))!;
      const size = (text: string): number =>
        BSON.calculateObjectSize(encodeRecord(finalRow(text)(probe), 1, true).doc as never);
      const text = "x".repeat(MAX_DOCUMENT_BYTES - 200 - size(""));
      expect(size(text)).toBeLessThanOrEqual(MAX_DOCUMENT_BYTES);
      await writer.updateRecord("big", finalRow(text));
      await eventually(() => big.seen.length === 2, 60_000);
      expect(big.seen).toEqual(["pending", "completed"]);
      await writer.updateRecord("next", (e) => ({ ...e, status: "aborted" }));
      await eventually(() => next.seen.length === 2, 30_000);
      expect(next.seen).toEqual(["pending", "aborted"]);
      await Promise.all([big.stop(), next.stop()]);
      await Promise.all([watcher.close(), writer.close()]);
    });
  });
}
