import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  findStoreDirectories,
  indexKeysWithoutHead,
  mapLimit,
  namesIn,
  unlinkIfExists,
} from "../../stores/file/session-files.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { useTempDirs } from "./file-fixtures.js";

// The directory scans the file store's listing and sweeping are built on (stores/file/session-files.ts).

const tempDir = useTempDirs("agentd-session-files-");

describe("mapLimit", () => {
  it("resolves to the results in the order of the items, with at most `limit` calls in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const results = await mapLimit([5, 1, 4, 2, 3], 2, async (n) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, n));
      inFlight--;
      return n * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30]);
    expect(most).toBe(2);
  });
});

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

describe("indexKeysWithoutHead", () => {
  it("lists the sessions whose record index exists without a head file (an interrupted delete)", async () => {
    const layout = new StoreLayout(await tempDir());
    await mkdir(layout.sessionsDir, { recursive: true });
    await writeFile(layout.headPathOfKey(sessionKey("whole")), "{}");
    await writeFile(layout.indexPathOfKey(sessionKey("whole")), "");
    await writeFile(layout.indexPathOfKey(sessionKey("headless")), "");
    await writeFile(layout.headPathOfKey(sessionKey("index-less")), "{}");
    expect(await indexKeysWithoutHead(layout)).toEqual([sessionKey("headless")]);
  });

  it("lists nothing for a store without a sessions directory", async () => {
    expect(await indexKeysWithoutHead(new StoreLayout(await tempDir()))).toEqual([]);
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
