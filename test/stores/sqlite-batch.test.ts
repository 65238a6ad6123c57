import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { SqliteEngine } from "../../stores/sql/sqlite-engine.js";
import { checkpointRecord, commitOf, commitRecord, T0, type CounterState } from "./snapshot-factory.js";

describe("sqlite writer thread: pipelined transactions", () => {
  const dirs: string[] = [];
  const opened: SqlSessionStore<CounterState>[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  /** A migrated store on a fresh file, with a scratch table `t (k TEXT PRIMARY KEY, v INTEGER)`. */
  async function fresh(): Promise<{ store: SqlSessionStore<CounterState>; engine: SqliteEngine }> {
    const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-batch-"));
    dirs.push(dir);
    const engine = new SqliteEngine(join(dir, "agentd.db"));
    const store = new SqlSessionStore<CounterState>(engine);
    opened.push(store);
    await store.ready();
    await engine.transaction((tx) => tx.run("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)"));
    return { store, engine };
  }
  async function rowsOf(engine: SqliteEngine): Promise<Array<{ k: string; v: number }>> {
    const rows = await engine.reader.query("SELECT k, v FROM t ORDER BY k");
    return rows.map((r) => ({ k: String(r.k), v: Number(r.v) }));
  }

  it("creates a session in 1 message, and a second creation of it conflicts without writing its record", async () => {
    const { store, engine } = await fresh();
    const before = engine.messages;
    await commitRecord(store, undefined, checkpointRecord("s1", "r0"));
    expect(engine.messages - before).toBe(1);
    expect(await store.commit(commitOf(undefined, checkpointRecord("s1", "other")))).toBeUndefined();
    expect(await store.getRecord("other")).toBeUndefined();
    expect(await store.getHead("s1")).toMatchObject({ headSnapshotId: "r0", version: 1 });
  });

  it("commits a turn from the version it last wrote (head compare-and-set, record, request IDs) in 1 message, all landing together", async () => {
    const { store, engine } = await fresh();
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "r0"));
    const before = engine.messages;
    const record = checkpointRecord("s1", "r1", { parentId: "r0", turnIndex: 1, createdAt: T0 + 1 });
    const commit = commitOf(head, record);
    const requests = [{ requestId: "req-1", snapshotId: "r1", committedAt: T0 + 1 }];
    head = (await store.commit({ ...commit, head: { ...commit.head, requests } }))!;
    expect(engine.messages - before).toBe(1);
    expect(head.version).toBe(2);
    expect(await store.getHead("s1")).toMatchObject({ headSnapshotId: "r1", version: 2, requests });
    expect(await store.getRecord("r1")).toMatchObject({ snapshotId: "r1", turnIndex: 1 });

    // A stale compare-and-set writes nothing of its queued record.
    const stale = commitOf({ ...head, version: 1 }, checkpointRecord("s1", "r2", { turnIndex: 2 }));
    expect(await store.commit(stale)).toBeUndefined();
    expect(await store.getRecord("r2")).toBeUndefined();
  });

  it("reads the request rows first (2 messages) when committing from a version another store wrote", async () => {
    const { store, engine } = await fresh();
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "r0"));
    const other = new SqlSessionStore<CounterState>(new SqliteEngine(engine.description));
    opened.push(other);
    const first = commitOf(head, checkpointRecord("s1", "r1", { parentId: "r0", turnIndex: 1, createdAt: T0 + 1 }));
    const kept = { requestId: "req-1", snapshotId: "r1", committedAt: T0 + 1 };
    head = (await other.commit({ ...first, head: { ...first.head, requests: [kept] } }))!;
    const before = engine.messages;
    const second = commitOf(head, checkpointRecord("s1", "r2", { parentId: "r1", turnIndex: 2, createdAt: T0 + 2 }));
    const added = { requestId: "req-2", snapshotId: "r2", committedAt: T0 + 2 };
    expect(await store.commit({ ...second, head: { ...second.head, requests: [kept, added] } })).toMatchObject({
      version: 3,
    });
    expect(engine.messages - before).toBe(2);
    expect(await other.getHead("s1")).toMatchObject({ version: 3, requests: [kept, added] });
  });

  it("writes the stored request rows right when the session it remembers was re-created at the same version elsewhere", async () => {
    const { store, engine } = await fresh();
    const other = new SqlSessionStore<CounterState>(new SqliteEngine(engine.description));
    opened.push(other);
    const withRequests = async (
      on: SqlSessionStore<CounterState>,
      previous: Awaited<ReturnType<typeof commitRecord>>,
      snapshotId: string,
      createdAt: number,
      requests: Array<{ requestId: string; snapshotId: string; committedAt: number }>,
    ) => {
      const commit = commitOf(previous, checkpointRecord("s1", snapshotId, { turnIndex: previous.version, createdAt }));
      return (await on.commit({ ...commit, head: { ...commit.head, requests } }))!;
    };
    // This store remembers version 2 of s1 with request "old".
    const v1 = await commitRecord(store, undefined, checkpointRecord("s1", "a0"));
    const old = { requestId: "old", snapshotId: "a1", committedAt: T0 + 1 };
    await withRequests(store, v1, "a1", T0 + 1, [old]);
    // Another store deletes s1 and builds a new s1 up to version 2, with request "new" (another updatedAt).
    expect(await other.deleteSession("s1")).toBe(true);
    const w1 = await commitRecord(other, undefined, checkpointRecord("s1", "b0", { createdAt: T0 + 5 }));
    const fresh2 = { requestId: "new", snapshotId: "b1", committedAt: T0 + 6 };
    const w2 = await withRequests(other, w1, "b1", T0 + 6, [fresh2]);
    // A commit from version 2 through this store keeps "new" and adds "next" (its remembered "old" is stale).
    const next = { requestId: "next", snapshotId: "b2", committedAt: T0 + 7 };
    const head = await withRequests(store, w2, "b2", T0 + 7, [fresh2, next]);
    expect(head.version).toBe(3);
    expect(await other.getHead("s1")).toMatchObject({ headSnapshotId: "b2", version: 3, requests: [fresh2, next] });
  });

  it("rolls back the whole transaction when one of its queued statements fails; the others of its batch land", async () => {
    const { engine } = await fresh();
    await engine.transaction(async (tx) => tx.write("INSERT INTO t (k, v) VALUES ('taken', 0)"));
    const failing = engine.transaction(async (tx) => {
      tx.write("INSERT INTO t (k, v) VALUES ('a', 1)");
      await tx.run("UPDATE t SET v = 5 WHERE k = 'taken'");
      tx.write("INSERT INTO t (k, v) VALUES ('b', 2)");
      tx.write("INSERT INTO t (k, v) VALUES ('taken', 3)"); // primary key violation
      tx.write("INSERT INTO t (k, v) VALUES ('c', 4)");
      return "failing";
    });
    const neighbour = engine.transaction(async (tx) => {
      tx.write("INSERT INTO t (k, v) VALUES ('n', 9)");
      return "neighbour";
    });
    await expect(failing).rejects.toMatchObject({ status: "ALREADY_EXISTS" });
    expect(await neighbour).toBe("neighbour");
    expect(await rowsOf(engine)).toEqual([
      { k: "n", v: 9 },
      { k: "taken", v: 0 },
    ]);
  });

  it("sends queued writes ahead of a read in the same transaction, in one message, so the read sees them", async () => {
    const { engine } = await fresh();
    let sent = 0;
    const seen = await engine.transaction(async (tx) => {
      tx.write("INSERT INTO t (k, v) VALUES ('x', 7)");
      tx.write("UPDATE t SET v = v + 1 WHERE k = 'x'");
      const before = engine.messages;
      const [rows, count] = await Promise.all([
        tx.query("SELECT v FROM t WHERE k = 'x'"),
        tx.query("SELECT COUNT(*) AS n FROM t"),
      ]);
      sent = engine.messages - before;
      return { v: Number(rows[0]?.v), n: Number(count[0]?.n) };
    });
    expect(seen).toEqual({ v: 8, n: 1 });
    expect(sent).toBe(1);
    expect(await rowsOf(engine)).toEqual([{ k: "x", v: 8 }]);
  });

  it("runs statements in the order issued, and transactions in the order queued", async () => {
    const { engine } = await fresh();
    const order: string[] = [];
    const first = engine.transaction(async (tx) => {
      tx.write("INSERT INTO t (k, v) VALUES ('x', 1)");
      tx.write("UPDATE t SET v = 2 WHERE k = 'x'");
      expect(await tx.run("UPDATE t SET v = v * 10 WHERE k = 'x'")).toBe(1);
      tx.write("UPDATE t SET v = v + 1 WHERE k = 'x'");
      order.push("first");
    });
    const second = engine.transaction(async (tx) => {
      const rows = await tx.query("SELECT v FROM t WHERE k = 'x'");
      tx.write("INSERT INTO t (k, v) VALUES ('y', ?)", [Number(rows[0]?.v) * 2]);
      order.push("second");
    });
    await Promise.all([first, second]);
    expect(order).toEqual(["first", "second"]);
    expect(await rowsOf(engine)).toEqual([
      { k: "x", v: 21 },
      { k: "y", v: 42 },
    ]);
  });
});
