import { getEventListeners } from "node:events";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionStore, type FileSessionStoreOptions } from "../../stores/file-store.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import type { SessionHead } from "../../stores/snapshot-store.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { runStoreConformance } from "./conformance.js";
import { age, deadPid, spyOnFileSyncs } from "./file-fixtures.js";
import {
  allRecords,
  checkpointRecord,
  commitOf,
  commitRecord,
  eventually,
  pendingRecord,
  T0,
  type CounterState,
} from "./snapshot-factory.js";

const dirs: string[] = [];
const stores: FileSessionStore<CounterState>[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "agentd-file-store-"));
  dirs.push(dir);
  return dir;
}

function open(dir: string, options: FileSessionStoreOptions = {}): FileSessionStore<CounterState> {
  const store = new FileSessionStore<CounterState>(dir, options);
  stores.push(store);
  return store;
}

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

runStoreConformance(
  "file",
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-file-store-"));
    // Calls without a tenant use the store directory itself; a tenant gets its own directory.
    const store = new FileSessionStore<CounterState>(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    return {
      store,
      openResources: () => store.activeWatcherCount + store.activeChunkWatcherCount,
      cleanup: () => rm(dir, { recursive: true, force: true }),
      crossProcess: { kind: "file", dir },
      footprint: () => treeOf(dir),
    };
  },
  { sharedAcrossProcesses: true, separatesTenants: true },
);

/** Every file and directory under `dir` (relative paths, sorted; directories end with "/"). */
async function treeOf(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.map((e) => relative(dir, join(e.parentPath, e.name)) + (e.isDirectory() ? "/" : "")).sort();
}

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe("file store layout", () => {
  it("creates directories with mode 0700 and files with mode 0600", async () => {
    const parent = await tempDir();
    const store = open(join(parent, "nested", "store"));
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.updateRecord("snap-1", (e) => ({ ...e, heartbeatAt: 1 }));
    const layout = new StoreLayout(store.directory);
    for (const dir of [join(parent, "nested"), store.directory, layout.recordsDir, layout.sessionsDir])
      expect(await mode(dir)).toBe(0o700);
    for (const file of [layout.markerPath, layout.recordPath("snap-1"), layout.headPath("s1"), layout.indexPath("s1")])
      expect(await mode(file)).toBe(0o600);
    expect(JSON.parse(await readFile(layout.markerPath, "utf8"))).toEqual({ format: 2 });
    // Nothing but the layout is left behind (no temp or lock files).
    expect((await readdir(store.directory)).sort()).toEqual(["agentd-store.json", "records", "sessions"]);
    expect(await readdir(layout.recordsDir)).toEqual(["snap-1.json"]);
  });

  it("stores each tenant's data under its own prefix directory", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => `tenants/${ctx.tenant ?? "none"}` });
    await store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")), { tenant: "acme" });
    expect(await store.getRecord("snap-1", { tenant: "acme" })).toBeDefined();
    expect(await store.getRecord("snap-1", { tenant: "globex" })).toBeUndefined();
    expect(await store.getHead("s1", { tenant: "globex" })).toBeUndefined();
    expect(await readdir(join(dir, "tenants", "acme", "records"))).toContain("snap-1.json");
    expect(await readdir(join(dir, "tenants"))).toEqual(["acme"]); // reads create nothing
  });

  it("keeps a tenant named like a layout directory apart from the records there", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    expect(store.baseDir({ tenant: "records" })).toBe(join(dir, "%72ecords"));
    expect(store.baseDir({ tenant: "Sessions/x" })).toBe(join(dir, "%53essions", "x"));
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")), { tenant: "records" });
    expect(await readdir(join(dir, "records"))).toEqual(["snap-1.json"]);
  });

  it("rejects a path prefix that climbs out with ..", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    await expect(
      store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")), { tenant: "../escape" }),
    ).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
    });
    expect(await readdir(join(dir, ".."))).not.toContain("escape");
  });

  it("keeps an absolute or dotted path prefix inside the store directory", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    expect(store.baseDir({ tenant: "/etc/passwd" })).toBe(join(dir, "etc", "passwd"));
    expect(store.baseDir({ tenant: ".hidden/a b" })).toBe(join(dir, "%2Ehidden", "a%20b"));
  });

  it("rejects a snapshot ID that is not a safe file name", async () => {
    const store = open(await tempDir());
    await expect(store.commit(commitOf(undefined, checkpointRecord("s1", "../x")))).rejects.toMatchObject({
      status: "INVALID_ARGUMENT",
    });
    expect(await store.getRecord("../x")).toBeUndefined();
    expect(await store.updateRecord("../x", (e) => e)).toBeNull();
  });
});

describe("file store format check", () => {
  it("fails with FAILED_PRECONDITION on a directory whose marker names another format", async () => {
    for (const format of [1, 3]) {
      const dir = await tempDir();
      await writeFile(join(dir, "agentd-store.json"), JSON.stringify({ format }));
      let error: unknown;
      try {
        open(dir);
      } catch (err) {
        error = err;
      }
      expect(error).toMatchObject({ status: "FAILED_PRECONDITION", details: { foundFormat: format } });
      expect((error as Error).message).toContain(`${dir} was written in store format ${format}`);
      expect((error as Error).message).toMatch(/this agentd reads format 2.*new, empty directory/);
    }
  });

  it("fails with FAILED_PRECONDITION on format-1 snapshot files without a marker, and leaves them alone", async () => {
    const dir = await tempDir();
    const old = `{"format":1,"version":1,"status":"completed","createdAt":1,"parentId":null,"snapshot":{"snapshotId":"abc"}}`;
    await writeFile(join(dir, "abc.json"), old);
    expect(() => open(dir)).toThrow(
      expect.objectContaining({
        status: "FAILED_PRECONDITION",
        message: expect.stringMatching(/store format 1 \(snapshot file .*abc\.json\)/),
      }),
    );
    expect(await readdir(dir)).toEqual(["abc.json"]);
    expect(await readFile(join(dir, "abc.json"), "utf8")).toBe(old);
  });

  it("recognises a format-1 session index directory as format-1 data", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, ".sessions"));
    expect(() => open(dir)).toThrow(
      expect.objectContaining({ status: "FAILED_PRECONDITION", message: expect.stringContaining("store format 1") }),
    );
  });

  it("checks a tenant prefix directory at its first use", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "old"));
    await writeFile(join(dir, "old", "abc.json"), `{"format":1,"version":1,"snapshot":{}}`);
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    await expect(store.getRecord("abc", { tenant: "old" })).rejects.toMatchObject({ status: "FAILED_PRECONDITION" });
    await expect(
      store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")), { tenant: "old" }),
    ).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining(join(dir, "old")),
    });
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1")); // the root is format 2
  });

  it("accepts a directory holding unrelated JSON files and marks it", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "package.json"), JSON.stringify({ name: "x", format: 1 }));
    open(dir);
    expect(JSON.parse(await readFile(join(dir, "agentd-store.json"), "utf8"))).toEqual({ format: 2 });
  });
});

describe("file store failures", () => {
  it("reads a corrupt or truncated record file as DATA_LOSS, not as missing", async () => {
    const store = open(await tempDir());
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    const path = new StoreLayout(store.directory).recordPath("snap-1");
    const size = (await stat(path)).size;
    await truncate(path, Math.floor(size / 2));
    const dataLoss = { status: "DATA_LOSS", message: expect.stringContaining(path) };
    await expect(store.getRecord("snap-1")).rejects.toMatchObject(dataLoss);
    await expect(store.getChain("snap-1")).rejects.toMatchObject(dataLoss);
    await expect(store.listRecords("s1")).rejects.toMatchObject(dataLoss);
    await expect(store.updateRecord("snap-1", (e) => e)).rejects.toMatchObject(dataLoss);
    await writeFile(path, "");
    await expect(store.getRecord("snap-1")).rejects.toMatchObject(dataLoss);
    await writeFile(
      path,
      JSON.stringify({
        format: 2,
        version: 1,
        status: "completed",
        record: { snapshotId: "other", status: "completed" },
      }),
    );
    await expect(store.getRecord("snap-1")).rejects.toMatchObject(dataLoss);
  });

  it("reads a corrupt head file as DATA_LOSS and commits nothing over it", async () => {
    const store = open(await tempDir());
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    const path = new StoreLayout(store.directory).headPath("s1");
    await writeFile(path, "{");
    await expect(store.getHead("s1")).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: expect.stringContaining(path),
    });
    const next = checkpointRecord("s1", "snap-2");
    await expect(store.commit({ ...commitOf(undefined, next), expectedVersion: 1 })).rejects.toMatchObject({
      status: "DATA_LOSS",
    });
    expect(await store.getRecord("snap-2")).toBeUndefined();
  });

  it("reads a record file that is valid JSON but not a format-2 record as DATA_LOSS, not as missing", async () => {
    const store = open(await tempDir());
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    const path = new StoreLayout(store.directory).recordPath("snap-1");
    const valid = await readFile(path, "utf8");
    const { format: _format, ...withoutFormat } = JSON.parse(valid) as Record<string, unknown>;
    const texts = [
      ...["null", "[]", "{}", `{"format":2}`, JSON.stringify({ ...withoutFormat, format: 2, record: null })],
      ...[JSON.stringify(withoutFormat), ...[1, 3].map((f) => valid.replace('"format":2', `"format":${f}`))],
    ];
    for (const text of texts) {
      await writeFile(path, text);
      await expect(store.getRecord("snap-1"), text.slice(0, 40)).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: expect.stringMatching(/not a valid agentd record .*restore it from a backup/),
      });
      await expect(store.listRecords("s1"), text.slice(0, 40)).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: expect.stringContaining(path),
      });
    }
  });

  it("reads a head file of another format, or holding another session's head, as DATA_LOSS", async () => {
    const store = open(await tempDir());
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, undefined, checkpointRecord("s2", "snap-2"));
    const layout = new StoreLayout(store.directory);
    const path = layout.headPath("s1");
    const valid = await readFile(path, "utf8");
    const { format: _format, ...withoutFormat } = JSON.parse(valid) as Record<string, unknown>;
    const dataLoss = { status: "DATA_LOSS", message: expect.stringContaining(path) };
    const otherFormats = [1, 3].map((f) => valid.replace('"format":2', `"format":${f}`));
    for (const text of [JSON.stringify(withoutFormat), ...otherFormats]) {
      await writeFile(path, text);
      await expect(store.getHead("s1"), text.slice(0, 40)).rejects.toMatchObject(dataLoss);
    }
    // s2's head file copied over s1's (a restore gone wrong): a valid head, but of another session.
    await writeFile(path, await readFile(layout.headPath("s2"), "utf8"));
    const holdsS2 = expect.stringMatching(/holds session "s2"/);
    await expect(store.getHead("s1")).rejects.toMatchObject({ ...dataLoss, message: holdsS2 });
    await expect(store.listHeads!({ owner: "" })).rejects.toMatchObject(dataLoss);
  });

  it("leaves no record of a commit that lost its version check or reused an ID", async () => {
    const store = open(await tempDir());
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    expect(
      await store.commit({ ...commitOf(head, checkpointRecord("s1", "late")), expectedVersion: 0 }),
    ).toBeUndefined();
    await expect(store.commit(commitOf(undefined, checkpointRecord("s2", "snap-1")))).rejects.toMatchObject({
      status: "ALREADY_EXISTS",
    });
    expect(await store.getRecord("late")).toBeUndefined();
    expect((await allRecords(store, "s1")).map((r) => r.snapshotId)).toEqual(["snap-1"]);
    expect(await allRecords(store, "s2")).toEqual([]);
    expect(await store.getHead("s2")).toBeUndefined();
    expect((await store.getRecord("snap-1"))!.sessionId).toBe("s1");
  });

  it("removes the record of a commit that fails after writing it, so a retry with the same ID succeeds", async () => {
    const store = open(await tempDir());
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    const indexPath = new StoreLayout(store.directory).indexPath("s1");
    const index = await readFile(indexPath, "utf8");
    await rm(indexPath);
    await mkdir(indexPath); // the index append (after the record is written) now fails
    const next = checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 });
    await expect(store.commit(commitOf(head, next))).rejects.toMatchObject({ code: "EISDIR" });
    expect(await store.getRecord("snap-2")).toBeUndefined();
    expect(await store.getHead("s1")).toEqual(head);
    await rm(indexPath, { recursive: true });
    await writeFile(indexPath, index);
    expect(await store.commit(commitOf(head, next))).toMatchObject({ headSnapshotId: "snap-2", version: 2 });
    expect((await allRecords(store, "s1")).map((r) => r.snapshotId)).toEqual(["snap-2", "snap-1"]);
  });

  it("recovers session and record locks abandoned by a dead process", { timeout: 15_000 }, async () => {
    const store = open(await tempDir(), { lockStaleMs: 10 * 60_000 }); // only the dead holder makes them abandoned
    const head = await commitRecord(store, undefined, pendingRecord("s1", "snap-1"));
    const layout = new StoreLayout(store.directory);
    const pid = await deadPid();
    const abandoned = JSON.stringify({ pid, token: "left-behind" });
    await writeFile(layout.headLockPath("s1"), abandoned);
    await writeFile(layout.recordLockPath("snap-1"), abandoned);
    const started = Date.now();
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    expect(await store.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" }))).toMatchObject({
      status: "aborted",
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await readdir(layout.sessionsDir)).filter((f) => f.includes("lock"))).toEqual([]);
    expect((await readdir(layout.recordsDir)).filter((f) => f.includes("lock"))).toEqual([]);
  });

  it("waits for a lock held by a live process instead of stealing it", async () => {
    const store = open(await tempDir(), { lockStaleMs: 10 * 60_000 });
    await commitRecord(store, undefined, pendingRecord("s1", "snap-1"));
    const lockPath = new StoreLayout(store.directory).recordLockPath("snap-1");
    await writeFile(lockPath, JSON.stringify({ pid: process.pid, token: "held" }));
    let done = false;
    const update = store.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" })).finally(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done).toBe(false);
    await rm(lockPath);
    expect(await update).toMatchObject({ status: "aborted" });
  });
});

describe("file store session lifecycle", () => {
  /** Commits a session of `records` checkpoint records (head updatedAt = last createdAt). */
  async function session(
    store: FileSessionStore<CounterState>,
    sessionId: string,
    options: { records?: number; ttlMs?: number; at?: number; tenant?: string } = {},
  ): Promise<string[]> {
    const ctx = options.tenant !== undefined ? { tenant: options.tenant } : undefined;
    let head: SessionHead | undefined;
    const ids: string[] = [];
    for (let i = 0; i < (options.records ?? 1); i++) {
      const record = checkpointRecord(sessionId, `${sessionId}-r${i}`, {
        turnIndex: i,
        createdAt: (options.at ?? T0) + i,
        ...(i ? { parentId: ids[i - 1]! } : {}),
      });
      const commit = commitOf(head, record);
      if (!head && options.ttlMs !== undefined) commit.head = { ...commit.head, ttlMs: options.ttlMs };
      head = await store.commit(commit, ctx);
      if (!head) throw new Error(`commit of ${record.snapshotId} conflicted`);
      ids.push(record.snapshotId);
    }
    return ids;
  }

  it("leaves no file or directory naming the deleted session, while another session's files remain", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const layout = new StoreLayout(store.directory);
    const keptIds = await session(store, "kept", { records: 2 });
    const doomedIds = await session(store, "doomed", { records: 3 });
    await store.updateRecord(doomedIds[0]!, (e) => ({ ...e, heartbeatAt: 1 }));
    const key = sessionKey("doomed");
    const mentions = (tree: string[], id: string, ids: string[], k: string) =>
      tree.filter((p) => p.includes(k) || ids.some((s) => p.includes(s)) || p.includes(id));
    expect(mentions(await treeOf(dir), "doomed", doomedIds, key)).toHaveLength(5); // head, idx, 3 records
    expect(await store.deleteSession("doomed")).toBe(true);
    const tree = await treeOf(dir);
    expect(mentions(tree, "doomed", doomedIds, key)).toEqual([]);
    expect(tree).toEqual(
      [
        "agentd-store.json",
        "records/",
        ...keptIds.map((id) => `records/${id}.json`),
        "sessions/",
        `sessions/${sessionKey("kept")}.head.json`,
        `sessions/${sessionKey("kept")}.idx`,
      ].sort(),
    );
    // No file of the session holds its ID either.
    for (const path of tree.filter((p) => !p.endsWith("/")))
      expect(await readFile(join(dir, path), "utf8")).not.toContain("doomed");
    expect(await readdir(layout.sessionsDir)).toHaveLength(2);
  });

  it("lists, deletes and sweeps within the caller's tenant directory; a sweep without context covers every tenant", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => (ctx.tenant ? `tenants/${ctx.tenant}` : "") });
    const acme = { tenant: "acme" };
    const globex = { tenant: "globex" };
    await session(store, "s1", { tenant: "acme", records: 2 });
    await session(store, "s1", { tenant: "globex" }); // the same session ID in another tenant
    await session(store, "short", { tenant: "acme", ttlMs: 50 });
    await session(store, "short", { tenant: "globex", ttlMs: 50 });
    await session(store, "short", { ttlMs: 50 }); // the root directory (no tenant)
    const listed = async (ctx?: { tenant: string }) =>
      (await store.listHeads!({ owner: "", now: T0 }, ctx)).heads.map((h) => h.sessionId).sort();
    expect(await listed(acme)).toEqual(["s1", "short"]);
    expect(await listed()).toEqual(["short"]);
    expect(await listed({ tenant: "nobody" })).toEqual([]);
    expect(await readdir(join(dir, "tenants"))).toEqual(["acme", "globex"]); // reads create no tenant directory

    expect(await store.deleteSession!("s1", acme)).toBe(true);
    expect(await store.getHead("s1", acme)).toBeUndefined();
    expect(await store.getHead("s1", globex)).toBeDefined();
    expect(await store.getRecord("s1-r0", globex)).toBeDefined();
    expect(await store.deleteSession!("s1", { tenant: "nobody" })).toBe(false);

    expect(await store.sweepExpired!(T0 + 50, acme)).toBe(1);
    expect(await store.getHead("short", globex)).toBeDefined();
    expect(await store.getHead("short")).toBeDefined();
    expect(await store.sweepExpired!(T0 + 50)).toBe(2); // globex's and the root's
    expect(await store.getHead("short", globex)).toBeUndefined();
    expect(await store.getHead("short")).toBeUndefined();
    expect(await listed(globex)).toEqual(["s1"]);
  });

  it("waits for a record update in flight (its lock held) and removes what it wrote", async () => {
    const store = open(await tempDir(), { lockStaleMs: 10 * 60_000 });
    const layout = new StoreLayout(store.directory);
    const [root] = await session(store, "s1");
    const path = layout.recordPath(root!);
    const written = await readFile(path, "utf8");
    // Another process is inside updateRecord: it holds the record lock and will write the file back.
    await writeFile(layout.recordLockPath(root!), JSON.stringify({ pid: process.pid, token: "updater" }));
    let done = false;
    const deleted = store.deleteSession!("s1").finally(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done).toBe(false);
    expect(await store.getHead("s1")).toBeUndefined(); // the head goes first: the session already reads as gone
    await writeFile(path, written); // the updater's write lands
    await rm(layout.recordLockPath(root!));
    expect(await deleted).toBe(true);
    expect(await store.getRecord(root!)).toBeUndefined();
    expect(await readdir(layout.recordsDir)).toEqual([]);
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });

  it("leaves a record listed in the index that belongs to another session alone", async () => {
    const store = open(await tempDir());
    const layout = new StoreLayout(store.directory);
    await session(store, "s1");
    await session(store, "s2");
    // A failed commit of s1 once indexed an ID that s2 later committed.
    await writeFile(layout.indexPath("s1"), `${T0}\ts2-r0\n`, { flag: "a" });
    expect(await store.deleteSession!("s1")).toBe(true);
    expect(await store.getRecord("s2-r0")).toBeDefined();
    expect(await store.getRecord("s1-r0")).toBeUndefined();
  });

  it("finishes a delete a crash interrupted (records and index left without a head) on the next sweep", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const layout = new StoreLayout(store.directory);
    await session(store, "kept");
    const baseline = await treeOf(dir);
    await session(store, "crashed", { records: 3 });
    await rm(layout.headPath("crashed")); // the delete removed the head, then the process died
    expect(await store.getHead("crashed")).toBeUndefined();
    expect(await store.getRecord("crashed-r1")).toBeDefined();
    expect(await store.sweepExpired!(T0)).toBe(0); // not an expired session: not counted
    expect(await treeOf(dir)).toEqual(baseline);
    expect(await store.getHead("kept")).toBeDefined();
  });

  it("does not sweep a corrupt head or a session a commit is creating", async () => {
    const store = open(await tempDir());
    const layout = new StoreLayout(store.directory);
    await session(store, "corrupt", { ttlMs: 50 });
    await writeFile(layout.headPath("corrupt"), "{");
    expect(await store.sweepExpired!(T0 + 1000)).toBe(0);
    expect(await readFile(layout.headPath("corrupt"), "utf8")).toBe("{");
    await expect(store.listHeads!({ owner: "" })).rejects.toMatchObject({ status: "DATA_LOSS" });
    // deleteSession removes it all the same.
    expect(await store.deleteSession!("corrupt")).toBe(true);
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });
});

describe("file store directory and health", () => {
  it("fails with FAILED_PRECONDITION naming the directory when it cannot be created, with the error as cause", async () => {
    const file = join(await tempDir(), "not-a-directory");
    await writeFile(file, "");
    const dir = join(file, "store");
    const error = expectThrowsAgentError(
      () => open(dir),
      "FAILED_PRECONDITION",
      `store directory ${dir} cannot be created or is not writable: ENOTDIR`,
    );
    expect(error.cause).toMatchObject({ code: "ENOTDIR" });
  });

  it("answers ping while the store directory is writable", async () => {
    await expect(open(await tempDir()).ping()).resolves.toBeUndefined();
  });

  it("fails ping with UNAVAILABLE naming the directory once it is gone, with the error as cause", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.debrisSwept;
    await rm(dir, { recursive: true });
    await expect(store.ping()).rejects.toMatchObject({
      status: "UNAVAILABLE",
      message: expect.stringContaining(`store directory ${dir} is not writable: ENOENT`),
      cause: expect.objectContaining({ code: "ENOENT" }),
    });
  });

  it("rejects a sweep time that is not a finite number with INVALID_ARGUMENT saying what it got", async () => {
    const store = open(await tempDir());
    for (const [now, shown] of [
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "Infinity"],
      ["1700000000000", "1700000000000"],
    ] as const) {
      await expect(store.sweepExpired(now as number), shown).rejects.toMatchObject({
        status: "INVALID_ARGUMENT",
        message: `sweepExpired: now must be an epoch-millisecond number (got ${shown})`,
      });
    }
  });
});

describe("file store options", () => {
  /** Writes a lock file held by this (live) process, aged `ms` into the past: a holder that stalled. */
  async function stalledLock(path: string, ms: number): Promise<void> {
    await writeFile(path, JSON.stringify({ pid: process.pid, token: "stalled" }));
    await age(path, ms);
  }

  it("fsyncs what it writes by default", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const syncs = await spyOnFileSyncs(dir);
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    expect(syncs).toHaveBeenCalled();
  });

  it("takes over session and record locks of a live holder older than lockStaleMs", { timeout: 15_000 }, async () => {
    const store = open(await tempDir(), { lockStaleMs: 1_000 });
    const head = await commitRecord(store, undefined, pendingRecord("s1", "snap-1"));
    const layout = new StoreLayout(store.directory);
    await stalledLock(layout.headLockPath("s1"), 5_000);
    await stalledLock(layout.recordLockPath("snap-1"), 5_000);
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    expect(await store.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" }))).toMatchObject({
      status: "aborted",
    });
  });

  it(
    "finishes an interrupted delete whose session lock a holder left stalled past lockStaleMs",
    { timeout: 15_000 },
    async () => {
      const store = open(await tempDir(), { lockStaleMs: 1_000 });
      await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
      const layout = new StoreLayout(store.directory);
      await rm(layout.headPath("s1")); // a delete interrupted after the head went
      await stalledLock(layout.headLockPath("s1"), 5_000);
      await store.sweepExpired(Date.now());
      expect(await readdir(layout.sessionsDir)).toEqual([]);
      expect(await readdir(layout.recordsDir)).toEqual([]);
    },
  );

  it("sweeps crash debris every debrisSweep.intervalMs, removing temporary files older than debrisSweep.tmpMaxAgeMs", async () => {
    const store = open(await tempDir(), { debrisSweep: { intervalMs: 50, tmpMaxAgeMs: 1_000 } });
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.debrisSwept;
    const layout = new StoreLayout(store.directory);
    const debris = join(layout.recordsDir, ".snap-9.json.0a1b2c.tmp");
    await writeFile(debris, "{");
    await age(debris, 5_000);
    await eventually(async () => !(await readdir(layout.recordsDir)).includes(".snap-9.json.0a1b2c.tmp"), 5_000);
  });
});

describe("file store status subscriptions", () => {
  it("ends every open subscription when the store closes", async () => {
    const store = open(await tempDir());
    await commitRecord(store, undefined, pendingRecord("s1", "bg"));
    const subscription = store.subscribeStatus("bg", new AbortController().signal)[Symbol.asyncIterator]();
    expect(await subscription.next()).toEqual({ done: false, value: "pending" });
    await store.close();
    expect(await subscription.next()).toEqual({ done: true, value: undefined });
    expect(store.activeWatcherCount).toBe(0);
  });

  it("fails a subscription in a tenant directory of another format, leaving no listener on its signal", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "old"));
    await writeFile(join(dir, "old", "abc.json"), `{"format":1,"version":1,"snapshot":{}}`);
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    const signal = new AbortController().signal;
    expect(() => store.subscribeStatus("abc", signal, { tenant: "old" })).toThrow(
      expect.objectContaining({ status: "FAILED_PRECONDITION" }),
    );
    expect(getEventListeners(signal, "abort")).toEqual([]);
    expect(store.activeWatcherCount).toBe(0);
  });
});
