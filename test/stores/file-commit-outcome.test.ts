import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { checkpointRecord, commitOf, commitRecord, ids, T0, type CounterState } from "./snapshot-factory.js";

// Commits whose write fails at the file store's own I/O boundary: the log's data sync (fdatasync)
// fails after the batch was written, and cutting the batch off again (ftruncate) fails or
// succeeds. The faults are injected by wrapping the two system calls (nothing else is faked).
const faults = vi.hoisted(() => ({ sync: 0, truncate: 0 }));

vi.mock("../../stores/file/descriptor-io.js", async (original) => {
  const io = await original<typeof import("../../stores/file/descriptor-io.js")>();
  return {
    ...io,
    datasyncDescriptor: async (fd: number): Promise<void> => {
      if (faults.sync > 0 && faults.sync--)
        throw Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
      return io.datasyncDescriptor(fd);
    },
  };
});

vi.mock("node:fs", async (original) => {
  const fs = await original<typeof import("node:fs")>();
  return {
    ...fs,
    ftruncateSync: (fd: number, len?: number): void => {
      if (faults.truncate > 0 && faults.truncate--)
        throw Object.assign(new Error("EIO: i/o error, ftruncate"), { code: "EIO" });
      fs.ftruncateSync(fd, len);
    },
  };
});

describe("file store: commits whose write fails after the batch reached the log", () => {
  const dirs: string[] = [];
  const stores: FileSessionStore<CounterState>[] = [];
  afterEach(async () => {
    faults.sync = 0;
    faults.truncate = 0;
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const open = (): FileSessionStore<CounterState> => {
    const dir = mkdtempSync(join(tmpdir(), "agentd-file-outcome-"));
    dirs.push(dir);
    const store = new FileSessionStore<CounterState>(dir, { journal: false, debrisSweep: { intervalMs: 0 } });
    stores.push(store);
    return store;
  };

  it("resolves a commit whose sync failed and whose batch could not be cut off as committed", async () => {
    const store = open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    faults.sync = 1;
    faults.truncate = 1;
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    const stored = await store.commit({ ...commitOf(head, next), token: "req-1" });
    expect(stored).toMatchObject({ headSnapshotId: "t1", version: 2, commitToken: "req-1" });
    expect(await store.getHead("s1")).toEqual(stored);
    expect(ids((await store.listRecords("s1")).records)).toEqual(["t1", "root"]);
  });

  it("rejects a commit whose sync failed and whose batch was cut off, and leaves no trace of its record", async () => {
    const store = open();
    const head = await commitRecord(store, undefined, checkpointRecord("s1", "root"));
    faults.sync = 1;
    const next = checkpointRecord("s1", "t1", { parentId: "root", turnIndex: 1, createdAt: T0 + 1 });
    await expect(store.commit(commitOf(head, next))).rejects.toThrow(/EIO/);
    expect(await store.getHead("s1")).toEqual(head);
    expect(await store.getRecord("t1")).toBeUndefined();
    expect(ids((await store.listRecords("s1")).records)).toEqual(["root"]);
  });
});
