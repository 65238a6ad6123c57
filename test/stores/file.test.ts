import { getEventListeners } from "node:events";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import fs, { readlinkSync } from "node:fs";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { FileSessionStore, type FileSessionStoreOptions } from "../../stores/file-store.js";
import { encodeLogLine } from "../../stores/file/log-line.js";
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

/**
 * Every file and directory under `dir` (relative paths, sorted; directories end with "/"),
 * except commit journal segments: those come and go as commits land and segments retire
 * (`file-journal.test.ts` checks that a deleted session's segments go right after the delete).
 */
async function treeOf(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .map((e) => relative(dir, join(e.parentPath, e.name)) + (e.isDirectory() ? "/" : ""))
    .filter((path) => !/^journal\/.+\.jnl$/.test(path))
    .sort();
}

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe("file store layout", () => {
  it("creates directories with mode 0700 and files with mode 0600", async () => {
    const parent = await tempDir();
    const store = open(join(parent, "nested", "store"));
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.updateRecord("snap-1", (e) => ({ ...e, heartbeatAt: 1 }));
    const layout = new StoreLayout(store.directory);
    for (const dir of [join(parent, "nested"), store.directory, layout.sessionsDir])
      expect(await mode(dir)).toBe(0o700);
    const log = layout.logPathOfKey(sessionKey("s1"));
    const lock = layout.lockPathOfKey(sessionKey("s1"));
    for (const file of [layout.markerPath, log, lock, layout.snapshotMapPath]) expect(await mode(file)).toBe(0o600);
    expect(JSON.parse(await readFile(layout.markerPath, "utf8"))).toEqual({ format: 3 });
    expect(await mode(join(store.directory, "journal"))).toBe(0o700);
    // The session's lock is kept while the store writes it; closing releases it and retires the
    // journal, and nothing but the layout is left.
    await store.close();
    expect((await readdir(store.directory)).sort()).toEqual([
      "agentd-store.json",
      "journal",
      "sessions",
      "snapshots.map",
    ]);
    expect(await readdir(layout.sessionsDir)).toEqual([`${sessionKey("s1")}.log`]);
    expect(await readdir(join(store.directory, "journal"))).toEqual([]);
  });

  it("stores each tenant's data under its own prefix directory", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => `tenants/${ctx.tenant ?? "none"}` });
    await store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")), { tenant: "acme" });
    expect(await store.getRecord("snap-1", { tenant: "acme" })).toBeDefined();
    expect(await store.getRecord("snap-1", { tenant: "globex" })).toBeUndefined();
    expect(await store.getHead("s1", { tenant: "globex" })).toBeUndefined();
    expect(await readdir(join(dir, "tenants", "acme", "sessions"))).toContain(`${sessionKey("s1")}.log`);
    expect(await readdir(join(dir, "tenants"))).toEqual(["acme"]); // reads create nothing
  });

  it("keeps a tenant named like a layout directory apart from the records there", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    expect(store.baseDir({ tenant: "sessions" })).toBe(join(dir, "%73essions"));
    expect(store.baseDir({ tenant: "Sessions/x" })).toBe(join(dir, "%53essions", "x"));
    expect(store.baseDir({ tenant: "snapshots.map" })).toBe(join(dir, "%73napshots.map"));
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.commit(commitOf(undefined, checkpointRecord("s1", "snap-1")), { tenant: "sessions" });
    expect((await readdir(join(dir, "sessions"))).filter((f) => f.endsWith(".log"))).toEqual([
      `${sessionKey("s1")}.log`,
    ]);
    expect(await readdir(join(dir, "%73essions"))).toContain("sessions");
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
    for (const [format, what] of [
      [1, /this agentd reads format 3.*new, empty directory/],
      [2, /this agentd reads format 3\. Stop every agentd using it and convert it with: agentd upgrade-store /],
    ] as const) {
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
      expect((error as Error).message).toMatch(what);
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
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1")); // the root is format 3
  });

  it("accepts a directory holding unrelated JSON files and marks it", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "package.json"), JSON.stringify({ name: "x", format: 1 }));
    open(dir);
    expect(JSON.parse(await readFile(join(dir, "agentd-store.json"), "utf8"))).toEqual({ format: 3 });
  });
});

/** The session's log in the store's own directory. */
function logOf(store: FileSessionStore<CounterState>, sessionId: string): string {
  return new StoreLayout(store.directory).logPathOfKey(sessionKey(sessionId));
}

/** Replaces the first `from` in the file with `to` in place (same length: garbled bytes, the size unchanged). */
async function garble(path: string, from: string, to: string): Promise<void> {
  expect(to).toHaveLength(from.length);
  const text = await readFile(path, "latin1");
  const at = text.indexOf(from);
  expect(at, `${from} in ${path}`).toBeGreaterThanOrEqual(0);
  await writeFile(path, text.slice(0, at) + to + text.slice(at + from.length), "latin1");
}

/** The lines of a log file, each with its newline. */
async function logLines(path: string): Promise<string[]> {
  return (await readFile(path, "latin1")).split(/(?<=\n)/);
}

describe("file store failures", () => {
  it("reads a garbled record as DATA_LOSS, not as missing", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    await garble(logOf(store, "s1"), '"snapshotId":"snap-1"', '"snapshotId":"snap-X"');
    const reader = open(dir); // as another process would
    const dataLoss = { status: "DATA_LOSS", message: expect.stringContaining(logOf(store, "s1")) };
    await expect(reader.getRecord("snap-1")).rejects.toMatchObject(dataLoss);
    await expect(reader.getChain("snap-1")).rejects.toMatchObject(dataLoss);
    await expect(reader.listRecords("s1")).rejects.toMatchObject(dataLoss);
    await expect(reader.updateRecord("snap-1", (e) => e)).rejects.toMatchObject(dataLoss);
    expect((await reader.getRecord("snap-2"))?.snapshotId).toBe("snap-2");
  });

  it("reads an intact record line that does not hold its record as DATA_LOSS", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.close();
    const path = logOf(store, "s1");
    const [recordLine, headLine] = await logLines(path);
    const record = JSON.parse(recordLine!.slice(recordLine!.indexOf("{"))) as Record<string, unknown>;
    for (const payload of ["null", "[]", "{", JSON.stringify({ ...record, snapshotId: "other" })]) {
      const fields = { kind: "R" as const, id: "snap-1", version: 1, status: "completed", createdAt: T0 };
      await writeFile(path, Buffer.concat([encodeLogLine(fields, payload).bytes, Buffer.from(headLine!, "latin1")]));
      await expect(open(dir).getRecord("snap-1"), payload).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: expect.stringMatching(/restore it from a backup/),
      });
    }
  });

  it("reads a garbled head before the last batch as DATA_LOSS and commits nothing over it", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    await store.close();
    await garble(logOf(store, "s1"), '"version":1', '"version":7'); // the first batch's head
    const reader = open(dir);
    const dataLoss = { status: "DATA_LOSS", message: expect.stringContaining(logOf(store, "s1")) };
    await expect(reader.getHead("s1")).rejects.toMatchObject(dataLoss);
    const next = checkpointRecord("s1", "snap-3", { createdAt: T0 + 2 });
    await expect(reader.commit({ ...commitOf(undefined, next), expectedVersion: 2 })).rejects.toMatchObject(dataLoss);
    await expect(reader.getRecord("snap-3")).resolves.toBeUndefined();
  });

  it("reads a garbled or incomplete last batch as not written (a write cut by a crash), and the next commit cuts it off", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const first = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, first, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    await store.close();
    const path = logOf(store, "s1");
    await garble(path, '"version":2', '"version":9'); // the last batch's head
    const reader = open(dir);
    expect(await reader.getHead("s1")).toEqual(first);
    expect(await reader.getRecord("snap-2")).toBeUndefined();
    const retried = await reader.commit(
      commitOf(first, checkpointRecord("s1", "snap-2b", { parentId: "snap-1", createdAt: T0 + 1 })),
    );
    expect(retried).toMatchObject({ version: 2, headSnapshotId: "snap-2b" });
    expect(await readFile(path, "latin1")).not.toContain('snap-2"');
    // Half a batch appended (a crash in the middle of a write): invisible, then cut off.
    const size = (await stat(path)).size;
    await writeFile(path, `R 00000000 999 snap-4 1 completed ${T0} {"snapshotId":"sn`, { flag: "a" });
    const other = open(dir);
    expect(await other.getHead("s1")).toEqual(retried);
    await commitRecord(other, retried, checkpointRecord("s1", "snap-5", { createdAt: T0 + 3 }));
    expect((await readFile(path, "latin1")).slice(size)).toMatch(/^R [0-9a-f]{8} \d+ snap-5 /);
  });

  it("reads a head that is not a session head, or another session's, as DATA_LOSS", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await commitRecord(store, undefined, checkpointRecord("s2", "snap-2"));
    await store.close();
    const path = logOf(store, "s1");
    const [recordLine] = await logLines(path);
    for (const payload of ["null", "{}", `{"sessionId":"s1"}`, "{"]) {
      const head = encodeLogLine({ kind: "H", id: "-", version: 1, status: "-", createdAt: 0 }, payload);
      await writeFile(path, Buffer.concat([Buffer.from(recordLine!, "latin1"), head.bytes]));
      await expect(open(dir).getHead("s1"), payload).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: expect.stringMatching(/not a valid agentd session head/),
      });
    }
    // s2's log copied over s1's (a restore gone wrong): a valid head, but of another session.
    await writeFile(path, await readFile(logOf(store, "s2")));
    const reader = open(dir);
    const dataLoss = { status: "DATA_LOSS", message: expect.stringContaining(path) };
    await expect(reader.getHead("s1")).rejects.toMatchObject({
      ...dataLoss,
      message: expect.stringMatching(/holds session "s2"/),
    });
    await expect(reader.listHeads!({ owner: "" })).rejects.toMatchObject(dataLoss);
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

  it("refuses a snapshot ID another session claimed first, even when that session's commit never landed", async () => {
    const store = open(await tempDir());
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    const layout = new StoreLayout(store.directory);
    // A commit of s9 claimed "taken" in the map, then failed before its log write.
    await writeFile(layout.snapshotMapPath, `\ntaken ${sessionKey("s9")}\n`, { flag: "a" });
    await expect(store.commit(commitOf(undefined, checkpointRecord("s2", "taken")))).rejects.toMatchObject({
      status: "ALREADY_EXISTS",
    });
    expect(await store.getRecord("taken")).toBeUndefined();
    expect(await store.getHead("s2")).toBeUndefined();
    // s9 itself may still commit it (a retry of its failed commit).
    await commitRecord(store, undefined, checkpointRecord("s9", "taken"));
    expect((await store.getRecord("taken"))!.sessionId).toBe("s9");
  });

  /** Fails the next fdatasync of a file whose path ends with `suffix` with EIO; other fdatasyncs go through. Returns the restore. */
  function failNextDatasyncOf(suffix: string): () => void {
    const fdatasync = fs.fdatasync;
    let failed = false;
    const spy = vi.spyOn(fs, "fdatasync").mockImplementation(((fd: number, callback: (err: Error | null) => void) => {
      if (failed || !readlinkSync(`/proc/self/fd/${fd}`).endsWith(suffix)) return fdatasync(fd, callback);
      failed = true;
      callback(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    }) as typeof fs.fdatasync);
    onTestFinished(() => spy.mockRestore());
    return () => spy.mockRestore();
  }

  it("leaves no trace of a commit whose journal sync fails, or (without a journal) whose log or snapshot map sync fails, so a retry with the same ID succeeds", async () => {
    for (const [failing, options] of [
      [".jnl", {}],
      [".log", { journal: false }],
      ["snapshots.map", { journal: false }],
    ] as const) {
      const store = open(await tempDir(), options);
      const head = await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
      const path = logOf(store, "s1");
      const size = (await stat(path)).size;
      const next = checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 });
      const restore = failNextDatasyncOf(failing);
      await expect(store.commit(commitOf(head, next)), failing).rejects.toMatchObject({ code: "EIO" });
      restore();
      expect((await stat(path)).size, failing).toBe(size);
      expect(await store.getRecord("snap-2")).toBeUndefined();
      expect(await store.getHead("s1")).toEqual(head);
      expect(await store.commit(commitOf(head, next))).toMatchObject({ headSnapshotId: "snap-2", version: 2 });
      expect(
        (await allRecords(store, "s1")).map((r) => r.snapshotId),
        failing,
      ).toEqual(["snap-2", "snap-1"]);
    }
  });

  it("recovers a session lock abandoned by a dead process", { timeout: 15_000 }, async () => {
    const dir = await tempDir();
    const first = open(dir, { lockStaleMs: 10 * 60_000 }); // only the dead holder makes it abandoned
    const head = await commitRecord(first, undefined, pendingRecord("s1", "snap-1"));
    await first.close();
    const layout = new StoreLayout(first.directory);
    await writeFile(layout.lockPathOfKey(sessionKey("s1")), JSON.stringify({ pid: await deadPid(), token: "left" }));
    const store = open(dir, { lockStaleMs: 10 * 60_000 });
    // Waiting out lockStaleMs (10 min) instead of noticing the dead holder would time the test out.
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    expect(await store.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" }))).toMatchObject({
      status: "aborted",
    });
    await store.close();
    expect((await readdir(layout.sessionsDir)).filter((f) => f.includes("lock"))).toEqual([]);
  });

  it("waits for a session lock held by a live process instead of stealing it", async () => {
    const dir = await tempDir();
    const first = open(dir, { lockStaleMs: 10 * 60_000 });
    await commitRecord(first, undefined, pendingRecord("s1", "snap-1"));
    await first.close();
    const lockPath = new StoreLayout(first.directory).lockPathOfKey(sessionKey("s1"));
    await writeFile(lockPath, JSON.stringify({ pid: process.pid, token: "held" }));
    const store = open(dir, { lockStaleMs: 10 * 60_000 });
    let done = false;
    const update = store.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" })).finally(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done).toBe(false);
    await rm(lockPath);
    expect(await update).toMatchObject({ status: "aborted" });
  });

  it("keeps a session's lock between its commits and hands it over when another process waits", async () => {
    const dir = await tempDir();
    const writer = open(dir);
    const head = await commitRecord(writer, undefined, checkpointRecord("s1", "snap-1"));
    const lockPath = new StoreLayout(writer.directory).lockPathOfKey(sessionKey("s1"));
    const held = await stat(lockPath);
    const second = await commitRecord(writer, head, checkpointRecord("s1", "snap-2", { createdAt: T0 + 1 }));
    expect((await stat(lockPath)).ino).toBe(held.ino); // the same lock file: not taken again
    const other = open(dir); // another process: it waits, announces itself, and gets the lock
    const third = await other.commit(commitOf(second, checkpointRecord("s1", "snap-3", { createdAt: T0 + 2 })));
    expect(third).toMatchObject({ version: 3 });
    // The first writer finds its lock gone and takes it again behind the other one.
    await commitRecord(writer, third, checkpointRecord("s1", "snap-4", { createdAt: T0 + 3 }));
    expect((await allRecords(other, "s1")).map((r) => r.snapshotId)).toEqual(["snap-4", "snap-3", "snap-2", "snap-1"]);
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
    const mentions = (tree: string[]) => tree.filter((p) => p.includes(key) || p.includes("doomed"));
    expect(mentions(await treeOf(dir))).toHaveLength(2); // its log and its lock
    expect(await store.deleteSession("doomed")).toBe(true);
    expect(mentions(await treeOf(dir))).toEqual([]);
    for (const id of doomedIds) expect(await store.getRecord(id)).toBeUndefined();
    // Once the journal segments holding its batches are retired (at the latest when the store closes).
    await store.close();
    const tree = await treeOf(dir);
    expect(tree).toEqual(
      ["agentd-store.json", "journal/", "sessions/", `sessions/${sessionKey("kept")}.log`, "snapshots.map"].sort(),
    );
    // No file holds the session's ID or data; the map keeps only the bare snapshot IDs it named.
    for (const path of tree.filter((p) => !p.endsWith("/") && p !== "snapshots.map"))
      expect(await readFile(join(dir, path), "utf8")).not.toContain("doomed");
    const mapLines = (await readFile(layout.snapshotMapPath, "utf8")).split("\n").filter(Boolean);
    expect(mapLines.sort()).toEqual(
      [...keptIds.map((id) => `${id} ${sessionKey("kept")}`), ...doomedIds.map((id) => `${id} ${key}`)].sort(),
    );
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

  it("waits for a commit or record update in flight in another process (the session lock held), then removes the session", async () => {
    const dir = await tempDir();
    const first = open(dir, { lockStaleMs: 10 * 60_000 });
    await session(first, "s1");
    await first.close();
    const layout = new StoreLayout(first.directory);
    const lockPath = layout.lockPathOfKey(sessionKey("s1"));
    await writeFile(lockPath, JSON.stringify({ pid: process.pid, token: "updater" }));
    const store = open(dir, { lockStaleMs: 10 * 60_000 });
    let done = false;
    const deleted = store.deleteSession!("s1").finally(() => (done = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done).toBe(false);
    expect(await store.getHead("s1")).toBeDefined();
    await rm(lockPath);
    expect(await deleted).toBe(true);
    expect(await store.getHead("s1")).toBeUndefined();
    expect(await store.getRecord("s1-r0")).toBeUndefined();
    expect(await readdir(layout.sessionsDir)).toEqual([]);
  });

  it("holds no session in a log without a complete batch (a first commit cut by a crash), and a new commit replaces it", async () => {
    const store = open(await tempDir());
    const layout = new StoreLayout(store.directory);
    await session(store, "kept");
    const path = layout.logPathOfKey(sessionKey("torn"));
    await writeFile(path, `R 00000000 999 torn-r0 1 completed ${T0} {"snapshotId":"to`);
    expect(await store.getHead("torn")).toBeUndefined();
    expect((await store.listHeads!({ owner: "" })).heads.map((h) => h.sessionId)).toEqual(["kept"]);
    expect(await store.sweepExpired!(T0 + 10_000_000)).toBe(0);
    await session(store, "torn");
    expect((await store.getRecord("torn-r0"))?.sessionId).toBe("torn");
    expect(await readFile(path, "latin1")).toMatch(/^R [0-9a-f]{8} \d+ torn-r0 1 completed /);
  });

  it("does not sweep a garbled log, which deleteSession removes all the same", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const layout = new StoreLayout(store.directory);
    const ids = await session(store, "corrupt", { ttlMs: 50, records: 2 });
    await store.close();
    const path = layout.logPathOfKey(sessionKey("corrupt"));
    await garble(path, `"headSnapshotId":"${ids[0]}"`, `"headSnapshotId":"${ids[0]!.replace("r0", "x0")}"`);
    const garbled = await readFile(path);
    const other = open(dir);
    expect(await other.sweepExpired!(T0 + 1000)).toBe(0);
    expect(await readFile(path)).toEqual(garbled);
    await expect(other.listHeads!({ owner: "" })).rejects.toMatchObject({ status: "DATA_LOSS" });
    expect(await other.deleteSession!("corrupt")).toBe(true);
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

  it("takes over a session lock of a live holder older than lockStaleMs", { timeout: 15_000 }, async () => {
    const dir = await tempDir();
    const first = open(dir, { lockStaleMs: 1_000 });
    const head = await commitRecord(first, undefined, pendingRecord("s1", "snap-1"));
    await first.close();
    const lockPath = new StoreLayout(first.directory).lockPathOfKey(sessionKey("s1"));
    await stalledLock(lockPath, 5_000);
    const store = open(dir, { lockStaleMs: 1_000 });
    await commitRecord(store, head, checkpointRecord("s1", "snap-2", { parentId: "snap-1", createdAt: T0 + 1 }));
    expect(await store.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" }))).toMatchObject({
      status: "aborted",
    });
    await store.close();
    await stalledLock(lockPath, 5_000);
    expect(await open(dir, { lockStaleMs: 1_000 }).deleteSession("s1")).toBe(true);
  });

  it("sweeps crash debris every debrisSweep.intervalMs, removing temporary files older than debrisSweep.tmpMaxAgeMs", async () => {
    const store = open(await tempDir(), { debrisSweep: { intervalMs: 50, tmpMaxAgeMs: 1_000 } });
    await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
    await store.debrisSwept;
    const layout = new StoreLayout(store.directory);
    const debris = join(layout.sessionsDir, ".snap-9.json.0a1b2c.tmp");
    await writeFile(debris, "{");
    await age(debris, 5_000);
    await eventually(async () => !(await readdir(layout.sessionsDir)).includes(".snap-9.json.0a1b2c.tmp"), 5_000);
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
