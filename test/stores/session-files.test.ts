import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileSessionStore } from "../../stores/file-store.js";
import { SessionLogs } from "../../stores/file/session-logs.js";
import { findStoreDirectories, namesIn, readAllHeads, unlinkIfExists } from "../../stores/file/session-files.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { KeyedMutex } from "../../stores/keyed-mutex.js";
import { useTempDirs } from "./file-fixtures.js";
import { checkpointRecord, commitRecord, type CounterState } from "./snapshot-factory.js";

// The directory scans the file store's listing and sweeping are built on (stores/file/session-files.ts).

const tempDir = useTempDirs("agentd-session-files-");

describe("namesIn", () => {
  it("resolves to no names when the directory does not exist", async () => {
    expect(await namesIn(join(await tempDir(), "missing"))).toEqual([]);
  });

  it("fails with the file system's error when the path is not a directory", async () => {
    const file = join(await tempDir(), "file");
    await writeFile(file, "");
    await expect(namesIn(file)).rejects.toMatchObject({ code: "ENOTDIR" });
  });
});

describe("readAllHeads", () => {
  /** A store directory with sessions `s1` and `s2` committed, and its layout. */
  async function twoSessions(): Promise<StoreLayout> {
    const store = new FileSessionStore<CounterState>(await tempDir(), { debrisSweep: { intervalMs: 0 } });
    try {
      await commitRecord(store, undefined, checkpointRecord("s1", "snap-1"));
      await commitRecord(store, undefined, checkpointRecord("s2", "snap-2"));
      return new StoreLayout(store.directory);
    } finally {
      await store.close();
    }
  }

  it("reads the head of every session log, keyed by the log's session key, and skips other files", async () => {
    const layout = await twoSessions();
    await writeFile(join(layout.sessionsDir, "notes.txt"), "not a log");
    const heads = await readAllHeads(layout, new SessionLogs(new KeyedMutex(), { root: layout.base, fsync: false }));
    expect(heads.map(({ key, head }) => [key, head.sessionId]).sort()).toEqual(
      [
        [sessionKey("s1"), "s1"],
        [sessionKey("s2"), "s2"],
      ].sort(),
    );
  });

  it("fails with DATA_LOSS for a log holding another session's head, or skips it with skipCorrupt", async () => {
    const layout = await twoSessions();
    await writeFile(layout.logPathOfKey(sessionKey("s1")), await readFile(layout.logPathOfKey(sessionKey("s2"))));
    const logs = new SessionLogs(new KeyedMutex(), { root: layout.base, fsync: false });
    await expect(readAllHeads(layout, logs)).rejects.toMatchObject({
      status: "DATA_LOSS",
      message: expect.stringContaining(`holds session "s2"`),
    });
    expect((await readAllHeads(layout, logs, { skipCorrupt: true })).map((h) => h.key)).toEqual([sessionKey("s2")]);
  });

  it("reads nothing for a store without a sessions directory", async () => {
    const layout = new StoreLayout(await tempDir());
    expect(await readAllHeads(layout, new SessionLogs(new KeyedMutex(), { root: layout.base, fsync: false }))).toEqual(
      [],
    );
  });
});

describe("findStoreDirectories", () => {
  /** Creates `root/<path>/sessions` for each path ("" is the root itself). */
  async function storeDirs(root: string, paths: string[]): Promise<void> {
    for (const path of paths) await mkdir(join(root, path, "sessions"), { recursive: true });
  }

  it("finds the root and every nested directory that holds a sessions directory", async () => {
    const root = await tempDir();
    await storeDirs(root, ["", "tenant-a", "tenant-a/team-1", "tenant-b/x/y"]);
    await mkdir(join(root, "empty"));
    expect((await findStoreDirectories(root)).sort()).toEqual(
      [root, join(root, "tenant-a"), join(root, "tenant-a/team-1"), join(root, "tenant-b/x/y")].sort(),
    );
  });

  it("does not count a file named sessions", async () => {
    const root = await tempDir();
    await mkdir(join(root, "tenant"));
    await writeFile(join(root, "tenant", "sessions"), "");
    expect(await findStoreDirectories(root)).toEqual([]);
  });

  it("does not descend into a store's own sessions, records and chunks directories or hidden directories", async () => {
    const root = await tempDir();
    await storeDirs(root, ["sessions/x", "records/x", "chunks/x", ".hidden", ".hidden/x", "visible"]);
    expect((await findStoreDirectories(root)).sort()).toEqual([root, join(root, "visible")].sort());
  });

  it("looks at most maxDepth directories below the root", async () => {
    const root = await tempDir();
    await storeDirs(root, ["a", "a/b", "a/b/c"]);
    expect((await findStoreDirectories(root, 2)).sort()).toEqual([join(root, "a"), join(root, "a/b")].sort());
    expect(await findStoreDirectories(join(root, "a"), 0)).toEqual([join(root, "a")]);
  });

  it("finds nothing under a root that does not exist", async () => {
    expect(await findStoreDirectories(join(await tempDir(), "missing"))).toEqual([]);
  });
});

describe("unlinkIfExists", () => {
  it("resolves to true when it removed the file and to false when there was none", async () => {
    const file = join(await tempDir(), "file");
    await writeFile(file, "x");
    expect(await unlinkIfExists(file)).toBe(true);
    expect(await unlinkIfExists(file)).toBe(false);
  });

  it("fails with the file system's error for anything else (a directory)", async () => {
    const dir = join(await tempDir(), "dir");
    await mkdir(dir);
    await expect(unlinkIfExists(dir)).rejects.toMatchObject({ code: expect.stringMatching(/^(EISDIR|EPERM)$/) });
  });
});
