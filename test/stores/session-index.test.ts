import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { appendIndexEntry, readIndexEntries } from "../../stores/file/session-index.js";
import { openFilesUnder, spyOnFileSyncs, useTempDirs } from "./file-fixtures.js";
import { T0 } from "./snapshot-factory.js";

// A session's record index in the file store (stores/file/session-index.ts): one
// `createdAt<TAB>snapshotId` line per committed record.

const tempDir = useTempDirs("agentd-session-index-");

describe("appendIndexEntry", () => {
  it("creates the index with mode 0600 and appends one line per entry", async () => {
    const path = join(await tempDir(), "k1.idx");
    await appendIndexEntry(path, { createdAt: T0, snapshotId: "snap-1" }, true);
    await appendIndexEntry(path, { createdAt: T0 + 1, snapshotId: "snap-2" }, false);
    expect(await readFile(path, "utf8")).toBe(`${T0}\tsnap-1\n${T0 + 1}\tsnap-2\n`);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it("closes the index file after appending", async () => {
    const dir = await tempDir();
    await appendIndexEntry(join(dir, "k1.idx"), { createdAt: T0, snapshotId: "snap-1" }, true);
    await appendIndexEntry(join(dir, "k2.idx"), { createdAt: T0, snapshotId: "snap-1" }, false);
    expect(await openFilesUnder(dir)).toEqual([]);
  });

  it("with fsync, syncs the index file", async () => {
    const dir = await tempDir();
    const sync = await spyOnFileSyncs(dir);
    await appendIndexEntry(join(dir, "k1.idx"), { createdAt: T0, snapshotId: "snap-1" }, true);
    expect(sync).toHaveBeenCalledTimes(1);
  });

  it("without fsync, does not sync the index file", async () => {
    const dir = await tempDir();
    const sync = await spyOnFileSyncs(dir);
    await appendIndexEntry(join(dir, "k1.idx"), { createdAt: T0, snapshotId: "snap-1" }, false);
    expect(sync).not.toHaveBeenCalled();
  });
});

describe("readIndexEntries", () => {
  it("resolves to the entries newest first, one per ID (its last line wins)", async () => {
    const path = join(await tempDir(), "k1.idx");
    await writeFile(path, `${T0}\tsnap-1\n${T0 + 2}\tsnap-2\n${T0 + 1}\tsnap-3\n${T0 + 5}\tsnap-1\n`);
    expect(await readIndexEntries(path)).toEqual([
      { snapshotId: "snap-1", createdAt: T0 + 5 },
      { snapshotId: "snap-2", createdAt: T0 + 2 },
      { snapshotId: "snap-3", createdAt: T0 + 1 },
    ]);
  });

  it("resolves to no entries when the session has no index", async () => {
    expect(await readIndexEntries(join(await tempDir(), "missing.idx"))).toEqual([]);
  });

  it("ignores a torn last line (a time without its tab and ID)", async () => {
    const path = join(await tempDir(), "k1.idx");
    await writeFile(path, `${T0}\tsnap-1\n${T0 + 1}`);
    expect(await readIndexEntries(path)).toEqual([{ snapshotId: "snap-1", createdAt: T0 }]);
  });

  it("ignores lines with an empty or non-numeric time, or an invalid snapshot ID", async () => {
    const path = join(await tempDir(), "k1.idx");
    await writeFile(path, [`${T0}\tsnap-1`, "\tsnap-2", "later\tsnap-3", `${T0 + 1}\t../x`, `${T0 + 2}\t`].join("\n"));
    expect(await readIndexEntries(path)).toEqual([{ snapshotId: "snap-1", createdAt: T0 }]);
  });
});
