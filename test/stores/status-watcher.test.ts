import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { DirectoryStatusWatcher } from "../../stores/file/status-watcher.js";
import { StoreLayout } from "../../stores/file/store-layout.js";
import { StatusChannel } from "../../stores/status-channel.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { useTempDirs } from "./file-fixtures.js";
import { commitRecord, eventually, pendingRecord, type CounterState } from "./snapshot-factory.js";

// The watcher of one records directory of the file store (stores/file/status-watcher.ts): whether
// it holds an OS watcher or poll timer (`active`), which the store counts as its open watchers.

const tempDir = useTempDirs("agentd-status-watcher-");

/** A channel subscribed to `snapshotId` that leaves `watcher` when it closes, as the file store wires it. */
function subscribe(watcher: DirectoryStatusWatcher, snapshotId: string): StatusChannel {
  const channel: StatusChannel = new StatusChannel(new AbortController().signal, () =>
    watcher.remove(snapshotId, channel),
  );
  watcher.add(snapshotId, channel);
  return channel;
}

/** Collects what `channel` yields until it closes. */
function collect(channel: StatusChannel): SnapshotStatus[] {
  const seen: SnapshotStatus[] = [];
  void (async () => {
    for await (const status of channel) seen.push(status);
  })();
  return seen;
}

/** A file store on `dir` (no periodic debris sweep) whose session s1 has the pending record snap-1. */
async function storeWithPendingRow(dir: string): Promise<FileSessionStore<CounterState>> {
  const store = new FileSessionStore<CounterState>(dir, { debrisSweep: { intervalMs: 0 } });
  await commitRecord(store, undefined, pendingRecord("s1", "snap-1"));
  return store;
}

describe("DirectoryStatusWatcher", () => {
  it("delivers the current status, then a change another writer renames into place, with polling disabled (fs.watch)", async () => {
    const dir = await tempDir();
    const writer = await storeWithPendingRow(dir);
    const watcher = new DirectoryStatusWatcher(new StoreLayout(dir).recordsDir, { pollIntervalMs: 0 }, () => undefined);
    const seen = collect(subscribe(watcher, "snap-1"));
    await eventually(() => seen.length === 1);
    await writer.updateRecord("snap-1", (e) => ({ ...e, status: "aborted" }));
    await eventually(() => seen.length === 2);
    expect(seen).toEqual(["pending", "aborted"]);
    watcher.closeAll();
    await writer.close();
  });

  it("polls every pollIntervalMs when the directory cannot be watched, delivering a record created later", async () => {
    const dir = await tempDir();
    const watcher = new DirectoryStatusWatcher(
      new StoreLayout(dir).recordsDir,
      { pollIntervalMs: 20 },
      () => undefined,
    );
    const seen = collect(subscribe(watcher, "snap-1")); // records/ does not exist yet: fs.watch fails
    const writer = await storeWithPendingRow(dir);
    await eventually(() => seen.length === 1);
    expect(seen).toEqual(["pending"]);
    watcher.closeAll();
    await writer.close();
  });

  it("keeps watching while a subscriber remains, and tells its owner once the last one leaves", async () => {
    let idle = 0;
    const watcher = new DirectoryStatusWatcher(await tempDir(), { pollIntervalMs: 0 }, () => idle++);
    const first = subscribe(watcher, "snap-1");
    const second = subscribe(watcher, "snap-2");
    first.close();
    expect({ active: watcher.active, idle }).toEqual({ active: true, idle: 0 });
    second.close();
    expect({ active: watcher.active, idle }).toEqual({ active: false, idle: 1 });
  });

  it("with polling disabled, is active while it watches the directory for a subscriber", async () => {
    const watcher = new DirectoryStatusWatcher(await tempDir(), { pollIntervalMs: 0 }, () => undefined);
    const channel = subscribe(watcher, "snap-1");
    expect(watcher.active).toBe(true);
    channel.close();
    expect(watcher.active).toBe(false);
  });

  it("is active, polling, for a subscriber of a directory that cannot be watched", async () => {
    const missing = join(await tempDir(), "records"); // fs.watch fails with ENOENT
    const watcher = new DirectoryStatusWatcher(missing, { pollIntervalMs: 60_000 }, () => undefined);
    subscribe(watcher, "snap-1");
    expect(watcher.active).toBe(true);
    watcher.closeAll();
    expect(watcher.active).toBe(false);
  });
});
