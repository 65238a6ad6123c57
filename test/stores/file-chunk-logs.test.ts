import { mkdir, readdir, realpath, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChunkLogKey } from "../../stores/chunk-log.js";
import type { FileSessionStore } from "../../stores/file-store.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { expectAgentError, expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { chunk } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import { osWatchesOn, recordFileSyncs, selfLink, useFileStores, useTempDirs } from "./file-fixtures.js";
import { eventually, type CounterState } from "./snapshot-factory.js";

// The file store's chunk logs (stores/file/chunk-logs.ts) beyond file-chunks.test.ts: what a
// look at a log leaves on disk, errors that are not a missing file, the directories an append
// fsyncs, which entries a sweep takes, and the watchers a store holds (wake-ups without the OS
// watcher, ending them, releasing their OS watches).

const tempDir = useTempDirs("agentd-chunk-logs-");
const open = useFileStores();

const BG = { sessionId: "s1", snapshotId: "bg" };
const paths = (dir: string, key: ChunkLogKey = BG) => {
  const layout = new StoreLayout(dir);
  const log = layout.chunkLogPath(key.sessionId, key.snapshotId);
  return { log, keep: layout.chunkKeepPath(key.sessionId, key.snapshotId), logDir: dirname(log) };
};
const listing = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true })).sort();

describe("file store chunk logs: looking at a log", () => {
  it("does not count an empty log file as having chunks", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks({ sessionId: "s1", snapshotId: "other" }, [chunk(1)], Date.now() + HOUR);
    await writeFile(paths(dir).log, ""); // created by an append that wrote nothing yet
    expect(await store.hasChunks(BG)).toBe(false);
  });

  it.each([
    ["readChunks", (store: FileSessionStore<CounterState>) => store.readChunks(BG, 0, 10)],
    ["hasChunks", (store: FileSessionStore<CounterState>) => store.hasChunks(BG)],
    ["keepChunks", (store: FileSessionStore<CounterState>) => store.keepChunks(BG, Date.now() + HOUR)],
  ])("writes nothing to a fresh store directory for %s of a missing log", async (_, look) => {
    const dir = await tempDir();
    const store = open(dir);
    const before = await listing(dir);
    await look(store);
    expect(await listing(dir)).toEqual(before);
  });

  it.each([
    ["hasChunks", (store: FileSessionStore<CounterState>) => store.hasChunks({ sessionId: "", snapshotId: "bg" })],
    [
      "keepChunks",
      (store: FileSessionStore<CounterState>) => store.keepChunks({ sessionId: "", snapshotId: "bg" }, Date.now()),
    ],
  ])("names %s in the error for a key without a session ID", async (method, call) => {
    await expectAgentError(call(open(await tempDir())), "INVALID_ARGUMENT", new RegExp(`^${method}: `));
  });

  it("names watchChunks in the error for a key without a session ID", async () => {
    const store = open(await tempDir());
    const watch = () => store.watchChunks({ sessionId: "", snapshotId: "bg" }, new AbortController().signal);
    expectThrowsAgentError(watch, "INVALID_ARGUMENT", /^watchChunks: /);
  });

  it("answers a read of no chunks without reading the log's lines", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await writeFile(paths(dir).log, "not a chunk line\n");
    expect(await store.readChunks(BG, 0, 0)).toEqual([]);
  });

  it("rejects hasChunks when the log's session directory is a file, rather than answering false", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await mkdir(join(dir, "chunks"));
    await writeFile(paths(dir).logDir, "not a directory");
    await expect(store.hasChunks(BG)).rejects.toMatchObject({ code: "ENOTDIR" });
  });
});

describe("file store chunk logs: keep-until", () => {
  it("sets the keep-until time of a log that exists but is empty", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const K = Date.now() + HOUR;
    await store.appendChunks({ sessionId: "s1", snapshotId: "other" }, [chunk(1)], K + 10_000);
    await writeFile(paths(dir).log, "");
    await store.keepChunks(BG, K);
    expect(await store.sweepChunks(K - 1)).toBe(0);
    expect(await readdir(paths(dir).logDir)).toContain("bg.jsonl");
  });

  it("rejects keepChunks when the keep file cannot be set for another reason than its absence", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await selfLink(paths(dir).keep);
    await expect(store.keepChunks(BG, Date.now() + 2 * HOUR)).rejects.toMatchObject({ code: "ELOOP" });
  });

  it("sweeps a log whose keep file is gone by the log's own modification time", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await unlink(paths(dir).keep);
    expect(await store.sweepChunks(Date.now() + 1000)).toBe(1);
    expect(await store.hasChunks(BG)).toBe(false);
  });
});

describe("file store chunk logs: appends", () => {
  it("rejects an append whose log cannot be created, without retrying for ever", { timeout: 10_000 }, async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks({ sessionId: "s1", snapshotId: "other" }, [chunk(1)], Date.now() + HOUR);
    await symlink(join(dir, "missing", "bg.jsonl"), paths(dir).log); // into a directory that does not exist
    await expect(store.appendChunks(BG, [chunk(1)], Date.now() + HOUR)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("fsyncs a session directory it creates, its parents chunks/ and the store directory, and the new log", async () => {
    const dir = await realpath(await tempDir());
    const store = open(dir);
    await store.appendChunks({ sessionId: "s0", snapshotId: "bg" }, [chunk(1)], Date.now() + HOUR);
    const syncs = await recordFileSyncs(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const { log, logDir } = paths(dir);
    expect(syncs).toEqual({ synced: [join(dir, "chunks"), dir, logDir], datasynced: [log] });
  });

  it("fsyncs only the lines of an append to a log that exists", async () => {
    const dir = await realpath(await tempDir());
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const syncs = await recordFileSyncs(dir);
    await store.appendChunks(BG, [chunk(2)], Date.now() + HOUR);
    expect(syncs).toEqual({ synced: [], datasynced: [paths(dir).log] });
  });

  it("fsyncs nothing with fsync off, even when it creates the session directory", async () => {
    const dir = await tempDir();
    const store = open(dir, { fsync: false });
    await store.appendChunks({ sessionId: "s0", snapshotId: "bg" }, [chunk(1)], Date.now() + HOUR);
    const syncs = await recordFileSyncs(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    expect(syncs).toEqual({ synced: [], datasynced: [] });
  });
});

describe("file store chunk logs: sweeps", () => {
  it("leaves a directory under chunks/ that is not a session key alone", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await mkdir(join(dir, "chunks", "stray"));
    await writeFile(join(dir, "chunks", "stray", "old.jsonl"), "");
    await store.sweepChunks(Date.now() + 2 * HOUR);
    expect(await readdir(join(dir, "chunks", "stray"))).toEqual(["old.jsonl"]);
  });

  it("sweeps every other log when a log's keep file cannot be read, then rejects with that error", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const K = Date.now() + HOUR;
    // An unreadable log in each session: whichever is met first, the other session's logs are still swept.
    const [badA, goodA, badB, goodB] = [
      ["s1", "a"],
      ["s1", "b"],
      ["s2", "c"],
      ["s2", "d"],
    ].map(([sessionId, snapshotId]) => ({ sessionId: sessionId!, snapshotId: snapshotId! }));
    for (const key of [badA, goodA, badB, goodB]) await store.appendChunks(key, [chunk(1)], K);
    for (const key of [badA, badB]) await selfLink(paths(dir, key).keep);
    await expect(store.sweepChunks(K)).rejects.toMatchObject({ code: "ELOOP" });
    expect((await readdir(paths(dir, badA).logDir)).sort()).toEqual(["a.jsonl", "a.keep"]);
    expect((await readdir(paths(dir, badB).logDir)).sort()).toEqual(["c.jsonl", "c.keep"]);
  });

  it("leaves a file whose name is not a snapshot ID alone", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await writeFile(join(paths(dir).logDir, "-bad.jsonl"), "");
    expect(await store.sweepChunks(Date.now() + 2 * HOUR)).toBe(1);
    expect(await readdir(paths(dir).logDir)).toEqual(["-bad.jsonl"]);
  });

  it("removes a session directory it empties while another session's log is watched", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const K = Date.now() + HOUR;
    const watch = startWatch(store, { sessionId: "s2", snapshotId: "bg" });
    try {
      await store.appendChunks(BG, [chunk(1)], K);
      expect(await store.sweepChunks(K)).toBe(1);
      expect(await readdir(join(dir, "chunks"))).toEqual([sessionKey("s2")]);
    } finally {
      await watch.stop();
    }
  });
});

describe("file store chunk logs: watchers", () => {
  it("ends every watcher of a log when the store closes", async () => {
    const store = open(await tempDir());
    const watches = [startWatch(store, BG), startWatch(store, BG)];
    await store.close();
    await Promise.all(watches.map((watch) => watch.ended));
  });

  it("ends the remaining watcher of a log when the store closes after another watcher of it ended", async () => {
    const store = open(await tempDir());
    const [first, second] = [startWatch(store, BG), startWatch(store, BG)];
    await first.stop();
    await store.close();
    await second.ended;
  });

  it("releases the OS watch on the log's directory when the watch ends", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const watch = startWatch(store, BG);
    const { logDir } = paths(dir);
    expect(await osWatchesOn(logDir)).toBe(1);
    await watch.stop();
    await eventually(async () => (await osWatchesOn(logDir)) === 0, 5_000);
  });

  it("wakes a watcher for its own store's append after its directory was removed and made again (no poll)", async () => {
    const dir = await tempDir();
    const store = open(dir, { pollIntervalMs: 0 });
    const watch = startWatch(store, BG);
    try {
      await rm(paths(dir).logDir, { recursive: true }); // the OS watcher now watches nothing
      await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1, 5_000);
    } finally {
      await watch.stop();
    }
  });

  it("wakes a watcher when its own store sweeps the log, without the OS watcher (no poll)", async () => {
    const dir = await tempDir();
    const store = open(dir, { pollIntervalMs: 0 });
    const K = Date.now() + HOUR;
    const watch = startWatch(store, BG);
    try {
      await rm(paths(dir).logDir, { recursive: true }); // the OS watcher now watches nothing
      await store.appendChunks(BG, [chunk(1)], K);
      await watch.untilWakes(1, 5_000);
      expect(await store.sweepChunks(K)).toBe(1);
      await watch.untilWakes(2, 5_000);
    } finally {
      await watch.stop();
    }
  });
});
