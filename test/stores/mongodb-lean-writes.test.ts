import { BSON, MongoClient, type Document } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { userText } from "../../src/types/content.js";
import type { DetachedWork } from "../../src/types/detached-work.js";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { RecordDocument } from "../../stores/mongodb/record-document.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { MongoWireTap, type TappedCommand } from "../harness/mongo-wire-tap.js";
import { freshPrefix } from "./mongodb-fixtures.js";
import {
  checkpointRecord,
  commitRecord,
  counterState,
  eventually,
  pendingRecord,
  T0,
  type CounterRecord,
  type CounterState,
} from "./snapshot-factory.js";

// What the writes of a detached job's row and of a turn's head cost on the wire (and so in the
// oplog): a heartbeat sets one small path whatever the row holds, a head write sets one token slot.
// Sizes are BSON bytes of the update statement (`u`) the store sends, seen by a wire tap.
const DATABASE = "agentd_lean_writes";
type Store = MongoSessionStore<CounterState>;
const KiB = 1024;
/** BSON bytes of one `pendingCommits.<token>` entry in a head write's `$unset`. */
const SETTLED_ENTRY_BYTES = 70;

/** Detached work whose initial state is `bytes` of message text (a job forked from a big state). */
function bigWork(bytes: number): DetachedWork {
  return {
    inputs: [{ message: userText("go on") } as DetachedWork["inputs"][number]],
    firstTurnIndex: 1,
    completed: 0,
    lastSequence: 0,
    runs: [{ invocationId: "inv-1", instance: "a", startedAt: T0, fromInput: 0 }],
    principal: { subject: "anonymous", tenant: "", claims: {} },
    initialState: { ...counterState("s1"), messages: [userText("x".repeat(bytes))] },
    controls: Array.from({ length: 16 }, (_, i) => ({
      requestId: `c${i}`,
      steer: userText("steer"),
      postedAt: T0 + i,
    })),
  };
}

describe("mongodb store: lean row and head writes (mongo-java-server, wire tap)", () => {
  let server: MongoJavaServer;
  let tap: MongoWireTap;
  let raw: MongoClient;
  const opened: Store[] = [];
  let seen: TappedCommand[] = [];
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    tap = await MongoWireTap.start(server.port);
    tap.listener = (_command, tapped) => seen.push(tapped);
    raw = new MongoClient(server.uri);
  }, 300_000);
  afterEach(async () => {
    tap.failpoint = undefined;
    for (const store of opened.splice(0)) await store.close();
  });
  afterAll(async () => {
    await raw?.close();
    await tap?.close();
    await server?.stop();
  });

  const open = async (prefix = freshPrefix()): Promise<{ store: Store; prefix: string }> => {
    const store = new MongoSessionStore<CounterState>({
      uri: `mongodb://127.0.0.1:${tap.port}/?directConnection=true&serverSelectionTimeoutMS=5000`,
      database: DATABASE,
      collectionPrefix: prefix,
      failoverWindowMs: 5_000,
    });
    opened.push(store);
    await store.ready();
    return { store, prefix };
  };
  const records = (prefix: string) => raw.db(DATABASE).collection<RecordDocument>(`${prefix}snapshots`);
  /** The update statements sent to `<collection suffix>` while `run` ran. */
  const updatesDuring = async (suffix: string, run: () => Promise<unknown>): Promise<Document[]> => {
    seen = [];
    await run();
    return seen
      .filter((c) => c.name === "update" && c.collection.endsWith(suffix))
      .flatMap((c) => c.statements.map((s) => s.u as Document));
  };
  const size = (doc: Document): number => BSON.calculateObjectSize(doc);

  /** A session whose head points at a committed root, and a pending job row forked from a 512 KiB state (its commit settled). */
  const jobRow = async (store: Store, prefix: string): Promise<CounterRecord> => {
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    const row = pendingRecord("s1", "job", { parentId: "root", turnIndex: 1, work: bigWork(512 * KiB) });
    await store.commit({ expectedVersion: head.version, head: { ...head, headSnapshotId: "root" }, record: row });
    await eventually(async () => (await records(prefix).findOne({ _id: "job" }))?.pending === undefined);
    return row;
  };

  it("a heartbeat of a job forked from a 512 KiB state sends under 1 KB, and the row reads back whole", async () => {
    const { store, prefix } = await open();
    const row = await jobRow(store, prefix);
    const heartbeat = (at: number) =>
      store.updateRecord("job", (r) => (r.status === "pending" ? { ...r, heartbeatAt: at } : null));
    for (let i = 0; i < 20; i++) {
      // Past the 16-slot token ring: each write still sets one slot.
      const updates = await updatesDuring("snapshots", () => heartbeat(T0 + 1_000 + i));
      expect(updates).toHaveLength(1);
      expect(size(updates[0]!)).toBeLessThan(KiB);
      expect(JSON.stringify(updates[0])).not.toContain("xxxx"); // nothing of the initial state
    }
    const read = await store.getRecord("job");
    expect(read).toMatchObject({ heartbeatAt: T0 + 1_019, work: row.work });
  });

  it("a checkpoint of the job sets its progress and state, never the initial state or the controls", async () => {
    const { store, prefix } = await open();
    const row = await jobRow(store, prefix);
    const updates = await updatesDuring("snapshots", () =>
      store.updateRecord("job", (r) => ({
        ...r,
        work: { ...r.work!, completed: 1, lastSequence: 7 },
        delta: { keepMessages: 0, appendMessages: [userText("done")] },
      })),
    );
    expect(updates).toHaveLength(1);
    expect(size(updates[0]!)).toBeLessThan(KiB);
    expect((await store.getRecord("job"))?.work).toEqual({ ...row.work, completed: 1, lastSequence: 7 });
    // A field the work no longer has is removed from the stored row.
    await store.updateRecord("job", (r) => {
      const { controls: _controls, ...work } = r.work!;
      return { ...r, work };
    });
    expect((await store.getRecord("job"))?.work?.controls).toBeUndefined();
  });

  it("a head write of a turn sends under 300 bytes besides the turn's record", async () => {
    const { store } = await open();
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    for (let turn = 1; turn <= 40; turn++) {
      const record = pendingRecord("s1", `t${turn}`, {
        status: "completed",
        parentId: turn === 1 ? "root" : `t${turn - 1}`,
        turnIndex: turn,
        depth: turn,
        delta: { keepMessages: 0, appendMessages: [userText(`turn ${turn}`)] },
      });
      const heads = await updatesDuring("heads", async () => (head = await commitRecord(store, head, record)));
      expect(heads.length).toBeGreaterThanOrEqual(1);
      // The head write also drops the pendingCommits entries of earlier turns settled since (usually one,
      // ~70 bytes each): the bound allows one.
      const settled = Object.keys((heads[0]!.$unset as Document | undefined) ?? {}).length;
      expect(size(heads[0]!) - SETTLED_ENTRY_BYTES * Math.max(0, settled - 1)).toBeLessThan(300);
      expect(JSON.stringify(heads[0])).not.toContain('"agent"'); // unchanged fields are not sent
    }
    expect(await store.getHead("s1")).toEqual(head);
  });

  it("sends every field again when the head is no longer the one this store wrote (deleted and re-created elsewhere)", async () => {
    const { store: a, prefix } = await open();
    const { store: b } = await open(prefix);
    const root = checkpointRecord("s1", "root");
    const v1 = await commitRecord(a, undefined, root);
    const v2 = await commitRecord(a, v1, checkpointRecord("s1", "r2", { parentId: "root", turnIndex: 1 }));
    // Another instance deletes the session and creates it again, to the same version with other fields.
    expect(await b.deleteSession("s1")).toBe(true);
    const w1 = await commitRecord(b, undefined, checkpointRecord("s1", "x1"));
    const labelled = { ...w1, labels: { team: "b" }, turnCount: 7 };
    const { version: _w, ...w1fields } = labelled;
    const w2 = (await b.commit({ expectedVersion: w1.version, head: w1fields }))!;
    expect(w2.version).toBe(v2.version);
    // The first store writes from "its" version 2: the head is not its write, so every field is sent.
    const { version: _v, ...fields } = v2;
    const written = await a.commit({ expectedVersion: v2.version, head: { ...fields, updatedAt: T0 + 9 } });
    expect(written).toBeDefined();
    const stored = (await a.getHead("s1"))!;
    expect(stored.labels).toBeUndefined();
    expect(stored).toMatchObject({ headSnapshotId: "r2", turnCount: 2, updatedAt: T0 + 9 });
  });

  it("reads a row stored with its metadata in one `body` and rewrites it split at its next update", async () => {
    const { store, prefix } = await open();
    await jobRow(store, prefix);
    const stored = (await records(prefix).findOne({ _id: "job" }))!;
    const row = (await store.getRecord("job"))!;
    // The row as an older version wrote it: one JSON body, a token list.
    const { checkpoint: _c, delta: _d, ...meta } = row;
    const { meta: _meta, work: _work, ...rest } = stored;
    await records(prefix).replaceOne({ _id: "job" }, { ...rest, body: JSON.stringify(meta), updateTokens: ["old-1"] });
    expect(await store.getRecord("job")).toEqual(row);
    await store.updateRecord("job", (r) => ({ ...r, heartbeatAt: T0 + 5 }));
    const migrated = (await records(prefix).findOne({ _id: "job" }))!;
    expect(migrated.body).toBeUndefined();
    expect(migrated.updateTokens).toBeUndefined();
    expect(Object.keys(migrated.meta ?? {})).toContain("heartbeatAt");
    expect(await store.getRecord("job")).toEqual({ ...row, heartbeatAt: T0 + 5 });
  });

  it("recognises a heartbeat whose reply was lost as applied (the ring holds its token), and applies it once", async () => {
    const { store, prefix } = await open();
    await jobRow(store, prefix);
    for (let i = 0; i < 17; i++) await store.updateRecord("job", (r) => ({ ...r, heartbeatAt: T0 + i }));
    let cut = 0;
    tap.failpoint = (c) =>
      c.name === "update" && c.collection.endsWith("snapshots") && cut++ === 0 ? "cut-after" : "pass";
    let applied = 0;
    const written = await store.updateRecord("job", (r) => {
      applied++;
      return { ...r, work: { ...r.work!, lastSequence: r.work!.lastSequence + 1 } };
    });
    expect(cut).toBeGreaterThanOrEqual(1);
    expect(applied).toBe(1);
    expect(written?.work?.lastSequence).toBe(1);
    expect((await store.getRecord("job"))?.work?.lastSequence).toBe(1);
  });
});
