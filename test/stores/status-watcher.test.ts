import { mkdirSync, readFileSync, renameSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { StatusWatcher, type StatusSource, type StatusWatcherOptions } from "../../stores/file/status-watcher.js";
import { StatusChannel, type StatusObservation } from "../../stores/status-channel.js";
import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { useTempDirs } from "./file-fixtures.js";
import { eventually, sleep } from "./snapshot-factory.js";

// The watcher of the snapshot statuses of one file store directory (stores/file/status-watcher.ts),
// driven here by a source of its own: `<dir>/<snapshotId>.json` holds {status, version}, written by
// the test as another process would write it.

const tempDir = useTempDirs("agentd-status-watcher-");

/** Writes `<dir>/<snapshotId>.json` as another writer would: a temporary file renamed into place. */
function writeStatus(dir: string, snapshotId: string, status: SnapshotStatus, version: number): void {
  const tmp = join(dir, `${snapshotId}.json.tmp`);
  writeFileSync(tmp, JSON.stringify({ status, version } satisfies StatusObservation));
  renameSync(tmp, join(dir, `${snapshotId}.json`));
}

/** A source reading `<statusDir>/<snapshotId>.json` (undefined while it does not exist), counting its reads. */
function jsonSource(
  statusDir: string,
  watched: { dirs?: string[]; relevant?: (filename: string) => boolean } = {},
): StatusSource & { reads: number } {
  const source = {
    dirs: watched.dirs ?? [statusDir],
    relevant: watched.relevant ?? ((filename: string) => filename.endsWith(".json")),
    reads: 0,
    read(snapshotId: string): StatusObservation | undefined {
      source.reads++;
      let text: string;
      try {
        text = readFileSync(join(statusDir, `${snapshotId}.json`), "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw err;
      }
      return JSON.parse(text) as StatusObservation;
    },
  };
  return source;
}

/** A watcher of `source` whose owner ignores it going idle. */
function statusWatcher(source: StatusSource, options: StatusWatcherOptions): StatusWatcher {
  return new StatusWatcher(source, options, () => undefined);
}

/** A channel subscribed to `snapshotId` that leaves `watcher` when it closes, as the file store wires it. */
function subscribe(watcher: StatusWatcher, snapshotId: string): StatusChannel {
  const channel: StatusChannel = new StatusChannel(new AbortController().signal, () =>
    watcher.remove(snapshotId, channel),
  );
  watcher.add(snapshotId, channel);
  return channel;
}

/** What `channel` yields, collected until it ends (`ended` turns true then). */
function collect(channel: StatusChannel): { seen: SnapshotStatus[]; ended: boolean } {
  const result = { seen: [] as SnapshotStatus[], ended: false };
  void (async () => {
    for await (const status of channel) result.seen.push(status);
    result.ended = true;
  })();
  return result;
}

/** Resolves once an `fs.watch` of `dir` of its own has seen a change of `filename`. */
function changeSeen(dir: string, filename: string): { seen: Promise<void> } {
  const watcher = watch(dir);
  const seen = new Promise<void>((resolve) => {
    watcher.on("change", (_event, name) => {
      if (name !== filename) return;
      watcher.close();
      resolve();
    });
  });
  return { seen };
}

describe("StatusWatcher", () => {
  it("delivers the current status to a new subscriber", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "completed", 3);
    const watcher = statusWatcher(jsonSource(dir), { pollIntervalMs: 0 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => subscription.seen.length === 1);
    expect(subscription.seen).toEqual(["completed"]);
    watcher.closeAll();
  });

  it("delivers a change another writer renames into a watched directory, with polling disabled (fs.watch)", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "pending", 1);
    const watcher = statusWatcher(jsonSource(dir), { pollIntervalMs: 0 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => subscription.seen.length === 1);
    writeStatus(dir, "snap-1", "aborted", 2);
    await eventually(() => subscription.seen.length === 2);
    expect(subscription.seen).toEqual(["pending", "aborted"]);
    watcher.closeAll();
  });

  it("watches every directory of its source", async () => {
    const [statusDir, signalDir] = [await tempDir(), await tempDir()];
    writeStatus(statusDir, "snap-1", "pending", 1);
    const source = jsonSource(statusDir, { dirs: [statusDir, signalDir], relevant: (name) => name === "changed" });
    const watcher = statusWatcher(source, { pollIntervalMs: 0 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => subscription.seen.length === 1);
    writeStatus(statusDir, "snap-1", "failed", 2);
    writeFileSync(join(signalDir, "changed"), "");
    await eventually(() => subscription.seen.length === 2);
    expect(subscription.seen).toEqual(["pending", "failed"]);
    watcher.closeAll();
  });

  it("re-reads every subscribed snapshot when a relevant file changes", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "pending", 1);
    writeStatus(dir, "snap-2", "pending", 1);
    const watcher = statusWatcher(jsonSource(dir, { relevant: (name) => name === "changed" }), { pollIntervalMs: 0 });
    const first = collect(subscribe(watcher, "snap-1"));
    const second = collect(subscribe(watcher, "snap-2"));
    await eventually(() => first.seen.length === 1 && second.seen.length === 1);
    writeStatus(dir, "snap-1", "completed", 2);
    writeStatus(dir, "snap-2", "failed", 2);
    writeFileSync(join(dir, "changed"), "");
    await eventually(() => first.seen.length === 2 && second.seen.length === 2);
    expect({ first: first.seen, second: second.seen }).toEqual({
      first: ["pending", "completed"],
      second: ["pending", "failed"],
    });
    watcher.closeAll();
  });

  it("does not re-read on a change of a file its source does not find relevant", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "pending", 1);
    const source = jsonSource(dir, { relevant: (name) => name === "changed" });
    const watcher = statusWatcher(source, { pollIntervalMs: 0 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => subscription.seen.length === 1);
    expect(source.reads).toBe(1);

    const renamed = changeSeen(dir, "snap-1.json");
    writeStatus(dir, "snap-1", "aborted", 2);
    await renamed.seen; // the watcher got the same event
    await sleep(50); // and would have re-read by now
    expect(source.reads).toBe(1);
    expect(subscription.seen).toEqual(["pending"]);
    watcher.closeAll();
  });

  it("polls every pollIntervalMs when the directory cannot be watched, delivering a status written later", async () => {
    const dir = join(await tempDir(), "records"); // not there yet: fs.watch fails
    const watcher = statusWatcher(jsonSource(dir), { pollIntervalMs: 20 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    mkdirSync(dir);
    writeStatus(dir, "snap-1", "pending", 1);
    await eventually(() => subscription.seen.length === 1);
    expect(subscription.seen).toEqual(["pending"]);
    watcher.closeAll();
  });

  it("delivers a status once however often it is re-read", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "pending", 1);
    const source = jsonSource(dir);
    const watcher = statusWatcher(source, { pollIntervalMs: 20 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => source.reads >= 5);
    expect(subscription.seen).toEqual(["pending"]);
    watcher.closeAll();
  });

  it("keeps re-reading after a read fails", async () => {
    const dir = await tempDir();
    writeFileSync(join(dir, "snap-1.json"), "{ half-written");
    const source = jsonSource(dir);
    const watcher = statusWatcher(source, { pollIntervalMs: 20 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => source.reads >= 3);
    expect(subscription.seen).toEqual([]);
    writeStatus(dir, "snap-1", "pending", 1);
    await eventually(() => subscription.seen.length === 1);
    expect(subscription.seen).toEqual(["pending"]);
    watcher.closeAll();
  });

  it("delivers an observation of this process's own write, and not again when a re-read finds it", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "pending", 1);
    const source = jsonSource(dir);
    const watcher = statusWatcher(source, { pollIntervalMs: 20 });
    const subscription = collect(subscribe(watcher, "snap-1"));
    await eventually(() => subscription.seen.length === 1);
    watcher.deliver("snap-1", { status: "completed", version: 2 });
    await eventually(() => subscription.seen.length === 2);
    writeStatus(dir, "snap-1", "completed", 2);
    const readsBefore = source.reads;
    await eventually(() => source.reads >= readsBefore + 3);
    expect(subscription.seen).toEqual(["pending", "completed"]);
    watcher.closeAll();
  });

  it("keeps watching while a subscriber remains, and tells its owner once the last one leaves", async () => {
    let idle = 0;
    const watcher = new StatusWatcher(jsonSource(await tempDir()), { pollIntervalMs: 0 }, () => idle++);
    const first = subscribe(watcher, "snap-1");
    const second = subscribe(watcher, "snap-2");
    first.close();
    expect({ active: watcher.active, idle }).toEqual({ active: true, idle: 0 });
    second.close();
    expect({ active: watcher.active, idle }).toEqual({ active: false, idle: 1 });
  });

  it("with polling disabled, is active while it watches the directory for a subscriber", async () => {
    const watcher = statusWatcher(jsonSource(await tempDir()), { pollIntervalMs: 0 });
    const channel = subscribe(watcher, "snap-1");
    expect(watcher.active).toBe(true);
    channel.close();
    expect(watcher.active).toBe(false);
  });

  it("is active, polling, for a subscriber of a directory that cannot be watched", async () => {
    const missing = join(await tempDir(), "records"); // fs.watch fails with ENOENT
    const watcher = statusWatcher(jsonSource(missing), { pollIntervalMs: 60_000 });
    subscribe(watcher, "snap-1");
    expect(watcher.active).toBe(true);
    watcher.closeAll();
    expect(watcher.active).toBe(false);
  });

  it("closeAll ends every subscription and stops watching", async () => {
    const dir = await tempDir();
    writeStatus(dir, "snap-1", "pending", 1);
    let idle = 0;
    const watcher = new StatusWatcher(jsonSource(dir), { pollIntervalMs: 20 }, () => idle++);
    const first = collect(subscribe(watcher, "snap-1"));
    const second = collect(subscribe(watcher, "snap-2"));
    watcher.closeAll();
    await eventually(() => first.ended && second.ended);
    expect({ active: watcher.active, idle }).toEqual({ active: false, idle: 1 });
  });
});
