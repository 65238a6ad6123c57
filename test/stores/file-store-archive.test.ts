// The reader of the retired file store (stores/file-archive/): what copy-store reads from a file
// store of format 3 — written by the file store itself (test/fixtures/file-store, see
// test/harness/file-store-fixtures.ts), crash leftovers included — and of format 2.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { appendFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { hash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { FileStoreArchive } from "../../stores/file-archive/file-store-archive.js";
import { headToStore } from "../../stores/record-identity.js";
import type { SessionHead, SnapshotRecord } from "../../stores/snapshot-store.js";
import { edgeExpected, extractFileStore } from "../harness/file-store-fixtures.js";
import { useTempDirs } from "./os-fixtures.js";
import { checkpointRecord, commitOf, pendingRecord, T0, type CounterState } from "./snapshot-factory.js";

const tempDir = useTempDirs("agentd-file-archive-");

/** The file name key of a session (40 hex digits of SHA-256 of its ID), as the file store named its files. */
function sessionKey(sessionId: string): string {
  return hash("sha256", sessionId, "hex").slice(0, 40);
}

/** Every record of a session through `listRecords`, `pageSize` at a time, newest first. */
async function allRecords(archive: FileStoreArchive, sessionId: string, pageSize = 100): Promise<SnapshotRecord[]> {
  const records: SnapshotRecord[] = [];
  let pageToken: string | undefined;
  do {
    const page = await archive.listRecords(sessionId, {
      pageSize,
      includeState: true,
      ...(pageToken ? { pageToken } : {}),
    });
    records.push(...page.records);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return records;
}

/** Every file under `dir` with its bytes' SHA-256. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out[path] = hash("sha256", readFileSync(path), "hex");
  }
  return out;
}

describe("FileStoreArchive on a format-3 store the file store wrote", () => {
  it("reads every session as the file store read it once recovered: torn batches dropped, a dead writer's journaled batch applied where its lock still names it", async () => {
    const dir = await tempDir();
    extractFileStore("edge", dir);
    const expected = edgeExpected();
    const archive = FileStoreArchive.open(dir);
    const heads = await archive.scanHeads(undefined, 100);
    // e2 was deleted; e3 lives in the tenant prefix directory acme/.
    expect(heads.map((h) => h.sessionId)).toEqual(["e1", "e3", "e4", "e5", "e6"]);
    for (const { head, records } of expected.sessions) {
      expect(
        heads.find((h) => h.sessionId === head.sessionId),
        head.sessionId,
      ).toEqual(head);
      expect(await allRecords(archive, head.sessionId), head.sessionId).toEqual(records);
    }
    const bySession = Object.fromEntries(expected.sessions.map((s) => [s.head.sessionId, s.records.length]));
    // e4: its third turn only in the dead writer's journal; e6: its lock released, so its log counts.
    expect(bySession).toEqual({ e1: 3, e3: 2, e4: 3, e5: 2, e6: 1 });
    // e1-r1 was updated twice after its commit: its newest version is read.
    expect(expected.sessions[0]!.records.find((r) => r.snapshotId === "e1-r1")?.updatedAt).toBe(1_760_000_000_012);
    expect((await archive.webhookOutbox().list({ tenant: "", pageSize: 100 })).events).toEqual(expected.webhooks);
  });

  it("pages a session's records and its heads like a store does", async () => {
    const dir = await tempDir();
    extractFileStore("edge", dir);
    const archive = FileStoreArchive.open(dir);
    expect((await allRecords(archive, "e1", 1)).map((r) => r.snapshotId)).toEqual(["e1-r2", "e1-r1", "e1-r0"]);
    expect((await archive.scanHeads("e3", 2)).map((h) => h.sessionId)).toEqual(["e4", "e5"]);
    expect(await archive.listRecords("e2")).toEqual({ records: [] });
    await expect(archive.scanHeads(undefined, 0)).rejects.toMatchObject({ status: "INVALID_ARGUMENT" });
  });

  it("writes nothing to the store it reads, crash leftovers included", async () => {
    const dir = await tempDir();
    extractFileStore("edge", dir);
    const before = await tree(dir);
    const archive = FileStoreArchive.open(dir);
    for (const head of await archive.scanHeads(undefined, 100)) await allRecords(archive, head.sessionId);
    await archive.webhookOutbox().list({ tenant: "" });
    expect(await tree(dir)).toEqual(before);
  });

  it("refuses a store a running process still journals into (FAILED_PRECONDITION naming it)", async () => {
    const dir = await tempDir();
    extractFileStore("edge", dir);
    const sleeper = spawn("sleep", ["60"], { stdio: "ignore" });
    onTestFinished(() => void sleeper.kill("SIGKILL"));
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").replace(/-/g, "").slice(0, 8);
    writeFileSync(join(dir, "journal", `${boot}-${sleeper.pid}-${T0}-00000001.jnl`), "");
    expect(() => FileStoreArchive.open(dir)).toThrow(
      expect.objectContaining({
        status: "FAILED_PRECONDITION",
        message: expect.stringContaining(`process ${sleeper.pid} is writing this file store`),
      }),
    );
  });

  it("fails with DATA_LOSS naming the log when a line before a complete batch is garbled", async () => {
    const dir = await tempDir();
    extractFileStore("edge", dir);
    const log = join(dir, "sessions", `${sessionKey("e1")}.log`);
    const text = await readFile(log, "latin1");
    const at = text.indexOf(`"turn 0 of e1"`);
    await writeFile(log, `${text.slice(0, at + 2)}X${text.slice(at + 3)}`, "latin1");
    expect(() => FileStoreArchive.open(dir)).toThrow(
      expect.objectContaining({
        status: "DATA_LOSS",
        message: expect.stringContaining(`session log ${log} is garbled`),
      }),
    );
  });

  it("is NOT_FOUND for a directory without a store, FAILED_PRECONDITION for another format", async () => {
    const dir = await tempDir();
    expect(() => FileStoreArchive.open(join(dir, "nothing"))).toThrow(
      expect.objectContaining({ status: "NOT_FOUND", message: expect.stringContaining("holds no agentd file store") }),
    );
    await writeFile(join(dir, "agentd-store.json"), `{"format":4}`);
    expect(() => FileStoreArchive.open(dir)).toThrow(
      expect.objectContaining({
        status: "FAILED_PRECONDITION",
        message: expect.stringContaining("formats 2 and 3 are read"),
      }),
    );
  });
});

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

describe("FileStoreArchive on a format-2 store", () => {
  it("reads every session's head and listed records, in the store and its tenant directories", async () => {
    const dir = await tempDir();
    const heads = await format2Directory(dir, {
      s1: { records: s1Records, updates: { "s1-r2": 3 } },
      s2: { records: [checkpointRecord("s2", "s2-r0")] },
    });
    const tenantHeads = await format2Directory(join(dir, "tenants", "acme"), {
      t1: { records: [checkpointRecord("t1", "t1-r0")] },
    });
    // A record no session lists, and one its index lists whose file a crash removed.
    await writeFile(join(dir, "records", "orphan.json"), recordFile(checkpointRecord("gone", "orphan")));
    await appendFile(join(dir, "sessions", `${sessionKey("s2")}.idx`), `${T0 + 9}\ts2-gone\n`);

    const archive = FileStoreArchive.open(dir);
    expect(await archive.scanHeads(undefined, 10)).toEqual([heads.s1, heads.s2, tenantHeads.t1]);
    expect(await allRecords(archive, "s1")).toEqual([...s1Records].reverse());
    expect((await allRecords(archive, "s2")).map((r) => r.snapshotId)).toEqual(["s2-r0"]);
    expect((await allRecords(archive, "t1")).map((r) => r.snapshotId)).toEqual(["t1-r0"]);
  });

  it("fails with DATA_LOSS naming a record file that is not JSON", async () => {
    const dir = await tempDir();
    await format2Directory(dir, { s1: { records: s1Records } });
    await writeFile(join(dir, "records", "s1-r1.json"), "{");
    const archive = FileStoreArchive.open(dir);
    await expect(allRecords(archive, "s1")).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: expect.stringContaining(`record file ${join(dir, "records", "s1-r1.json")} is not a format-2 record`),
    });
  });
});
