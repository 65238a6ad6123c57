import fs from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { syncDirectory } from "../../stores/file/directory-sync.js";
import { spyOnFileSyncs, useTempDirs } from "./file-fixtures.js";
import { eventually } from "./snapshot-factory.js";

// Coalesced directory fsyncs of the file store (stores/file/directory-sync.ts): every commit
// syncs the records and sessions directories; concurrent commits share those fsyncs.

const tempDir = useTempDirs("agentd-directory-sync-");

/** Holds every fsync (`fs.fsync`, as `syncDirectory` calls it) until released, in call order. */
function gatedSyncs(): { started: () => number; finishNext: () => void } {
  const held: (() => void)[] = [];
  let finished = 0;
  const fsync = fs.fsync;
  const spy = vi.spyOn(fs, "fsync").mockImplementation(((
    fd: number,
    callback: (err: NodeJS.ErrnoException | null) => void,
  ) => {
    held.push(() => fsync(fd, callback));
  }) as typeof fs.fsync);
  onTestFinished(() => spy.mockRestore());
  return { started: () => held.length, finishNext: () => held[finished++]!() };
}

/** Lets pending promise callbacks and file operations run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Waits until `count` fsyncs have started. */
async function startedCount(syncs: { started: () => number }, count: number): Promise<void> {
  await eventually(() => syncs.started() === count);
}

describe("syncDirectory", () => {
  it("fsyncs the directory once for a call on its own", async () => {
    const dir = await tempDir();
    const sync = await spyOnFileSyncs(dir);
    await syncDirectory(dir);
    expect(sync).toHaveBeenCalledTimes(1);
  });

  it("lets the calls made while an fsync runs share one fsync started after it", async () => {
    const dir = await tempDir();
    const syncs = gatedSyncs();
    const first = syncDirectory(dir);
    await startedCount(syncs, 1);
    const waiting = Array.from({ length: 5 }, () => syncDirectory(dir));
    await settle();
    expect(syncs.started()).toBe(1);
    syncs.finishNext();
    await first;
    await startedCount(syncs, 2);
    syncs.finishNext();
    await Promise.all(waiting);
    expect(syncs.started()).toBe(2);
  });

  it("does not resolve a call made during an fsync until an fsync started after the call is done", async () => {
    const dir = await tempDir();
    const syncs = gatedSyncs();
    void syncDirectory(dir);
    await startedCount(syncs, 1);
    let done = false;
    const later = syncDirectory(dir).then(() => (done = true));
    syncs.finishNext(); // the fsync that was running when `later` was called
    await startedCount(syncs, 2);
    expect(done).toBe(false);
    syncs.finishNext();
    await later;
    expect(done).toBe(true);
  });

  it("makes a call made during the queued fsync wait for one started after it in turn", async () => {
    const dir = await tempDir();
    const syncs = gatedSyncs();
    void syncDirectory(dir);
    await startedCount(syncs, 1);
    const second = syncDirectory(dir);
    syncs.finishNext();
    await startedCount(syncs, 2); // the queued fsync now runs
    let done = false;
    const third = syncDirectory(dir).then(() => (done = true));
    syncs.finishNext();
    await second;
    await startedCount(syncs, 3);
    expect(done).toBe(false);
    syncs.finishNext();
    await third;
  });

  it("syncs different directories independently", async () => {
    const root = await tempDir();
    const [a, b] = [join(root, "a"), join(root, "b")];
    await mkdir(a);
    await mkdir(b);
    const syncs = gatedSyncs();
    const both = [syncDirectory(a), syncDirectory(b)];
    await startedCount(syncs, 2);
    syncs.finishNext();
    syncs.finishNext();
    await Promise.all(both);
  });

  it("starts afresh once idle: a later call gets an fsync of its own", async () => {
    const dir = await tempDir();
    const sync = await spyOnFileSyncs(dir);
    await syncDirectory(dir);
    await syncDirectory(dir);
    expect(sync).toHaveBeenCalledTimes(2);
  });
});
