import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteEngine, type SqliteEngineOptions } from "../../stores/sql/sqlite-engine.js";
import { SQL_SCHEMA_VERSION } from "../../stores/sql/sql-migrations.js";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import { DatabaseSync } from "node:sqlite";
import { agentdCliArgs, REPO_ROOT } from "../harness/agentd-process.js";
import { runStoreConformance } from "./conformance.js";
import { sqlFootprint } from "./sql-fixtures.js";
import { checkpointRecord, commitOf, commitRecord, sleep, T0, type CounterState } from "./snapshot-factory.js";

runStoreConformance(
  "sqlite",
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-store-"));
    const path = join(dir, "agentd.db");
    const store = new SqlSessionStore<CounterState>(new SqliteEngine(path));
    return {
      store,
      openResources: () => store.subscriberCount + store.chunkWatcherCount,
      watchersSettled: () => store.watchersSettled,
      cleanup: () => rm(dir, { recursive: true, force: true }),
      crossProcess: { kind: "sql", uri: `sqlite:${path}` },
      footprint: () => sqlFootprint(store),
    };
  },
  { sharedAcrossProcesses: true, keepsToolJournal: true },
);

describe("sqlite store engine", () => {
  const dirs: string[] = [];
  const opened: SqlSessionStore<CounterState>[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });
  async function fresh(
    options: SqliteEngineOptions = {},
  ): Promise<{ store: SqlSessionStore<CounterState>; path: string }> {
    const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-engine-"));
    dirs.push(dir);
    const path = join(dir, "agentd.db");
    const store = new SqlSessionStore<CounterState>(new SqliteEngine(path, options));
    opened.push(store);
    await store.ready();
    return { store, path };
  }
  /** Another connection to the file, holding its write lock (as another process's writer would). */
  async function holdWriteLock(path: string): Promise<{ release(): void }> {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(path);
    db.exec("BEGIN IMMEDIATE");
    return {
      release: () => {
        db.exec("ROLLBACK");
        db.close();
      },
    };
  }

  it("keeps the event loop and reads going while a commit waits for another process's write lock", async () => {
    const { store, path } = await fresh();
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    const lock = await holdWriteLock(path);
    let landed = false;
    const commit = commitRecord(store, undefined, checkpointRecord("s2", "snap-2")).then((h) => {
      landed = true;
      return h;
    });
    // The writer thread waits on the lock; this thread still runs timers and answers reads.
    await sleep(200);
    expect(landed).toBe(false);
    expect((await store.getHead("s1"))?.headSnapshotId).toBe("snap-1");
    expect(await store.getHead("s2")).toBeUndefined();
    lock.release();
    expect(await commit).toMatchObject({ sessionId: "s2", version: 1 });
    expect(await store.getRecord("snap-2")).toBeDefined();
  });

  it("fails a commit with UNAVAILABLE, writing nothing, when the write lock stays held past the busy timeout", async () => {
    const { store, path } = await fresh({ busyTimeoutMs: 100 });
    const lock = await holdWriteLock(path);
    try {
      await expect(store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")))).rejects.toMatchObject({
        status: "UNAVAILABLE",
        message: expect.stringContaining(`sqlite store ${path}: database is locked`),
      });
    } finally {
      lock.release();
    }
    expect(await store.getHead("s1")).toBeUndefined();
    expect(await store.getRecord("snap-1")).toBeUndefined();
  });

  it("keeps request IDs in their own table: a turn adds one row and drops those past the window, the head row does not grow", async () => {
    const { store } = await fresh();
    const WINDOW = 16;
    let head = await commitRecord(store, undefined, checkpointRecord("s1", "r0"));
    const headBytes: number[] = [];
    for (let t = 1; t <= 40; t++) {
      const record = checkpointRecord("s1", `r${t}`, { parentId: `r${t - 1}`, turnIndex: t, createdAt: T0 + t });
      const commit = commitOf(head, record);
      const requests = [...(head.requests ?? []), { requestId: `req-${t}`, snapshotId: `r${t}`, committedAt: T0 + t }];
      head = (await store.commit({ ...commit, head: { ...commit.head, requests: requests.slice(-WINDOW) } }))!;
      const row = await store.engine.reader.query("SELECT length(head) AS n FROM heads WHERE session_id = 's1'");
      headBytes.push(Number(row[0]!.n));
    }
    expect(head.requests?.map((r) => r.requestId)).toEqual(Array.from({ length: WINDOW }, (_, i) => `req-${25 + i}`));
    expect((await store.getHead("s1"))?.requests).toEqual(head.requests);
    const rows = await store.engine.reader.query("SELECT request_id, position FROM requests WHERE session_id = 's1'");
    expect(rows).toHaveLength(WINDOW);
    // Each kept row is the one its turn wrote (position = head version × 1024 + index), never rewritten by a later turn.
    expect(new Set(rows.map((r) => Math.floor(Number(r.position) / 1024))).size).toBe(WINDOW);
    expect(Math.max(...headBytes) - Math.min(...headBytes)).toBeLessThan(8); // only the counters' digits change
  });

  it("migrates an existing database once and refuses one written by a newer schema with FAILED_PRECONDITION", async () => {
    const { store, path } = await fresh();
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.close();
    const again = new SqlSessionStore<CounterState>(new SqliteEngine(path));
    opened.push(again);
    expect((await again.getHead("s1"))?.headSnapshotId).toBe("snap-1");
    const versions = await again.engine.reader.query("SELECT version FROM agentd_schema ORDER BY version");
    // Every step once, in order.
    expect(versions.map((r) => Number(r.version))).toEqual(Array.from({ length: SQL_SCHEMA_VERSION }, (_, i) => i + 1));
    await again.close();

    const { DatabaseSync } = await import("node:sqlite");
    const raw = new DatabaseSync(path);
    raw.exec(`INSERT INTO agentd_schema (version, applied_at) VALUES (${SQL_SCHEMA_VERSION + 1}, 0)`);
    raw.close();
    const newer = new SqlSessionStore<CounterState>(new SqliteEngine(path));
    opened.push(newer);
    await expect(newer.ready()).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: `store ${path} has schema version ${SQL_SCHEMA_VERSION + 1}, newer than this agentd's ${SQL_SCHEMA_VERSION}: upgrade agentd`,
    });
  });

  it("refuses a path it cannot create with FAILED_PRECONDITION naming it", async () => {
    const { path } = await fresh();
    expect(() => new SqliteEngine(join(path, "inside-a-file.db"))).toThrow(
      expect.objectContaining({ status: "FAILED_PRECONDITION", message: expect.stringContaining(path) }),
    );
  });
});

describe("a damaged SQLite row", () => {
  it("reads as DATA_LOSS naming the snapshot or session and the column, not as an internal error", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-damaged-"));
    const file = join(dir, "agentd.db");
    const store = await openSqlStore(`sqlite:${file}`);
    try {
      await store.commit(commitOf(undefined, checkpointRecord("s1", "r1")));
      const db = new DatabaseSync(file);
      db.exec(`UPDATE records SET meta = '{"snapshotId":' WHERE snapshot_id = 'r1'`);
      db.exec(`UPDATE heads SET head = 'not json' WHERE session_id = 's1'`);
      db.close();
      await expect(store.getRecord("r1")).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: "snapshot r1: its meta column is not JSON; restore the row from a backup or delete the session",
      });
      await expect(store.getHead("s1")).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: expect.stringMatching(/^the head of session s1: its head column is not JSON/),
      });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("agentd upgrade-store on an SQL store (the CLI)", () => {
  async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await promisify(execFile)(
        `${REPO_ROOT}node_modules/.bin/node`,
        [...agentdCliArgs(), ...args],
        { cwd: REPO_ROOT, timeout: 30_000 },
      );
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it(
    "creates the schema of a new sqlite: database, then finds nothing to do; exits 2 for an unreachable PostgreSQL",
    { timeout: 90_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "agentd-sqlite-upgrade-"));
      try {
        const path = join(dir, "agentd.db");
        expect(await runCli(["upgrade-store", `sqlite:${path}`])).toEqual({
          code: 0,
          stdout: `agentd: sqlite:${path} is at schema version ${SQL_SCHEMA_VERSION} (was 0)\n`,
          stderr: "",
        });
        expect((await runCli(["upgrade-store", `sqlite:${path}`])).stdout).toBe(
          `agentd: sqlite:${path} is at schema version ${SQL_SCHEMA_VERSION} (was ${SQL_SCHEMA_VERSION})\n`,
        );
        const unreachable = await runCli(["upgrade-store", "postgres://u:pw@127.0.0.1:1/db"]);
        expect(unreachable.code).toBe(2);
        expect(unreachable.stderr).toMatch(
          /^agentd: upgrade-store: postgres store postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db: /,
        );
        expect(unreachable.stderr).not.toContain("pw@");
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it(
    "exits 2 for a file store directory, naming the copy-store command that moves it, and changes nothing",
    { timeout: 90_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "agentd-file-upgrade-"));
      try {
        await writeFile(join(dir, "agentd-store.json"), `{"format":2}\n`);
        for (const arg of [dir, `file:${dir}`]) {
          expect(await runCli(["upgrade-store", arg])).toEqual({
            code: 2,
            stdout: "",
            stderr:
              `agentd: upgrade-store: the store file:${dir}: the file store is retired; copy its sessions into SQLite with ` +
              `"agentd copy-store file:${dir} sqlite:${dir}/agentd.db", then serve --store sqlite:${dir}/agentd.db\n`,
          });
        }
        expect(await readdir(dir)).toEqual(["agentd-store.json"]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
