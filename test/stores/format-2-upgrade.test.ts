import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { appendFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { upgradeFormat2Store } from "../../stores/file/format-2-upgrade.js";
import { sessionKey } from "../../stores/file/store-layout.js";
import { headToStore } from "../../stores/record-identity.js";
import type { SessionHead, SnapshotRecord } from "../../stores/snapshot-store.js";
import { agentdCliArgs, REPO_ROOT } from "../harness/agentd-process.js";
import { useTempDirs } from "./file-fixtures.js";
import { allRecords, checkpointRecord, commitOf, pendingRecord, T0, type CounterState } from "./snapshot-factory.js";

// Converting a file store of store format 2 (records/<id>.json, sessions/<key>.head.json and
// .idx) to format 3 (stores/file/format-2-upgrade.ts, `agentd upgrade-store`).

const tempDir = useTempDirs("agentd-format-2-upgrade-");
const stores: FileSessionStore<CounterState>[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function open(dir: string): FileSessionStore<CounterState> {
  const store = new FileSessionStore<CounterState>(dir, {
    pathPrefix: (ctx) => (ctx.tenant ? `tenants/${ctx.tenant}` : ""),
    debrisSweep: { intervalMs: 0 },
  });
  stores.push(store);
  return store;
}

/** A record file as store format 2 wrote it (`version` counts its updates, from 1). */
function recordFile(record: SnapshotRecord<CounterState>, version = 1): string {
  return `{"format":2,"version":${version},"status":${JSON.stringify(record.status)},"record":${JSON.stringify(record)}}`;
}

/**
 * Writes a format-2 store directory holding `sessions` (each: its records in commit order; the
 * last one's version after `updates` record updates) the way format 2 laid them out; resolves to
 * each session's head.
 */
async function format2Directory(
  dir: string,
  sessions: Record<string, { records: SnapshotRecord<CounterState>[]; updates?: Record<string, number> }>,
): Promise<Record<string, SessionHead>> {
  await mkdir(join(dir, "records"), { recursive: true });
  await mkdir(join(dir, "sessions"), { recursive: true });
  await writeFile(join(dir, "agentd-store.json"), `{"format":2}\n`);
  const heads: Record<string, SessionHead> = {};
  for (const [sessionId, { records, updates = {} }] of Object.entries(sessions)) {
    const key = sessionKey(sessionId);
    let head: SessionHead | undefined;
    for (const record of records) {
      head = headToStore(commitOf(head, record as never));
      await writeFile(
        join(dir, "records", `${record.snapshotId}.json`),
        recordFile(record, updates[record.snapshotId]),
      );
      await appendFile(join(dir, "sessions", `${key}.idx`), `${record.createdAt}\t${record.snapshotId}\n`);
    }
    await writeFile(join(dir, "sessions", `${key}.head.json`), JSON.stringify({ format: 2, head }));
    heads[sessionId] = head!;
  }
  return heads;
}

const s1Records = [
  checkpointRecord("s1", "s1-r0"),
  checkpointRecord("s1", "s1-r1", { parentId: "s1-r0", createdAt: T0 + 1 }),
  { ...pendingRecord("s1", "s1-r2"), parentId: "s1-r1", createdAt: T0 + 2, status: "aborted" as const },
];

describe("upgradeFormat2Store", () => {
  it("converts every session's head and records, with their versions, in the store and its tenant directories", async () => {
    const dir = await tempDir();
    const heads = await format2Directory(dir, {
      s1: { records: s1Records, updates: { "s1-r2": 3 } },
      s2: { records: [checkpointRecord("s2", "s2-r0")] },
    });
    const tenantHeads = await format2Directory(join(dir, "tenants", "acme"), {
      t1: { records: [checkpointRecord("t1", "t1-r0")] },
    });
    await writeFile(join(dir, "records", "orphan.json"), recordFile(checkpointRecord("gone", "orphan")));

    expect(await upgradeFormat2Store(dir)).toEqual({
      directories: [dir, join(dir, "tenants", "acme")],
      sessions: 3,
      records: 5,
    });

    const store = open(dir);
    expect(await store.getHead("s1")).toEqual(heads.s1);
    expect(await store.getHead("s2")).toEqual(heads.s2);
    expect((await allRecords(store, "s1")).map((r) => r.snapshotId)).toEqual(["s1-r2", "s1-r1", "s1-r0"]);
    expect(await store.getRecord("s1-r1")).toEqual(s1Records[1]);
    expect(await store.getRecord("orphan")).toBeUndefined();
    expect(await store.getHead("t1", { tenant: "acme" })).toEqual(tenantHeads.t1);
    expect(await store.getHead("t1")).toBeUndefined();
    // The record's update count carries over: a watcher sees the same version, the next update the next one.
    const updated = await store.updateRecord("s1-r2", (e) => ({ ...e, heartbeatAt: 5 }));
    expect(updated?.status).toBe("aborted");
    const log = await readFile(join(dir, "sessions", `${sessionKey("s1")}.log`), "latin1");
    expect(log).toMatch(/ s1-r2 4 aborted /);
    for (const base of [dir, join(dir, "tenants", "acme")]) {
      expect(JSON.parse(await readFile(join(base, "agentd-store.json"), "utf8"))).toEqual({ format: 3 });
      expect(existsSync(join(base, "records"))).toBe(false);
      expect((await readdir(join(base, "sessions"))).filter((f) => /\.head\.json$|\.idx$/.test(f))).toEqual([]);
    }
  });

  it("refuses a store a running agentd holds a lock in, changing nothing", async () => {
    const dir = await tempDir();
    await format2Directory(dir, { s1: { records: s1Records } });
    const lock = join(dir, "sessions", `${sessionKey("s1")}.lock`);
    await writeFile(lock, JSON.stringify({ pid: process.pid, token: "serving" }));
    const before = (await readdir(dir, { recursive: true })).sort();
    await expect(upgradeFormat2Store(dir)).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining(`held by process ${process.pid}: stop every agentd using this store`),
    });
    expect((await readdir(dir, { recursive: true })).sort()).toEqual(before);
    expect(JSON.parse(await readFile(join(dir, "agentd-store.json"), "utf8"))).toEqual({ format: 2 });
  });

  it("finishes a conversion a crash interrupted, and leaves a converted store as it is", async () => {
    const dir = await tempDir();
    const heads = await format2Directory(dir, { s1: { records: s1Records } });
    // An earlier run died after writing part of a log and of the map, before the marker.
    await writeFile(join(dir, "sessions", `${sessionKey("s1")}.log`), "R 0000");
    await writeFile(join(dir, "snapshots.map"), `\ns1-r0 ${sessionKey("other")}\n`);
    await upgradeFormat2Store(dir);
    expect(await upgradeFormat2Store(dir)).toEqual({ directories: [], sessions: 0, records: 0 });
    const store = open(dir);
    expect(await store.getHead("s1")).toEqual(heads.s1);
    expect((await store.getRecord("s1-r0"))?.sessionId).toBe("s1");
  });

  it("refuses a directory of another format, and one that holds no store", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "sessions"));
    await writeFile(join(dir, "agentd-store.json"), `{"format":1}`);
    await expect(upgradeFormat2Store(dir)).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining("is not a format-2 store"),
    });
    await expect(upgradeFormat2Store(await tempDir())).rejects.toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining("holds no agentd file store"),
    });
  });
});

describe("agentd upgrade-store (the CLI)", () => {
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

  it("converts the directory a file: URI names, says what it converted, and exits 0", async () => {
    const dir = await tempDir();
    const heads = await format2Directory(dir, { s1: { records: s1Records } });
    const result = await runCli(["upgrade-store", `file:${dir}`]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toBe(
      `agentd: ${dir} is store format 3 (1 directories; 1 sessions and 3 snapshots converted)\n`,
    );
    expect(await open(dir).getHead("s1")).toEqual(heads.s1);
  });

  it("exits 2 with one line for a store it cannot convert, and without a directory", async () => {
    const missing = join(await tempDir(), "none");
    expect(await runCli(["upgrade-store", missing])).toMatchObject({
      code: 2,
      stderr: `agentd: upgrade-store: ${missing} holds no agentd file store\n`,
    });
    const bare = await runCli(["upgrade-store"]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^agentd: upgrade-store takes one store directory\nUsage: agentd upgrade-store/);
  });
});
