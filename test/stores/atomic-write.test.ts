import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeFileAtomically } from "../../stores/file/atomic-write.js";
import { LARGE_WRITE_BYTES } from "../../stores/file/descriptor-io.js";
import { openFilesUnder, spyOnFileSyncs, useTempDirs } from "./file-fixtures.js";

// Atomic file writes of the file store (stores/file/atomic-write.ts): every record and head file
// is written through writeFileAtomically.

const tempDir = useTempDirs("agentd-atomic-write-");

describe("writeFileAtomically", () => {
  it("replaces an existing file with the new text and leaves no temporary file", async () => {
    const dir = await tempDir();
    const path = join(dir, "head.json");
    await writeFile(path, "old");
    expect(await writeFileAtomically(path, "new", { fsync: true })).toBe(true);
    expect(await readFile(path, "utf8")).toBe("new");
    expect(await readdir(dir)).toEqual(["head.json"]);
  });

  it("writes a large text (thread-pool write) whole, multi-byte characters included", async () => {
    const dir = await tempDir();
    const path = join(dir, "record.json");
    const text = "ünïcødé ✓ ".repeat(Math.ceil((LARGE_WRITE_BYTES * 4) / 10));
    expect(text.length).toBeGreaterThan(LARGE_WRITE_BYTES);
    expect(await writeFileAtomically(path, text, { fsync: true, exclusive: true })).toBe(true);
    expect(await readFile(path, "utf8")).toBe(text);
    expect(await readdir(dir)).toEqual(["record.json"]);
  });

  it("closes every file and directory it opens", async () => {
    const root = await tempDir();
    const dir = join(root, "store");
    await mkdir(dir);
    await writeFileAtomically(join(dir, "a.json"), "a", { fsync: true });
    await writeFileAtomically(join(dir, "b.json"), "b", { fsync: true, exclusive: true });
    expect(await openFilesUnder(root)).toEqual([]);
  });

  it("with fsync, syncs the file and then its directory", async () => {
    const dir = await tempDir();
    const sync = await spyOnFileSyncs(dir);
    await writeFileAtomically(join(dir, "head.json"), "x", { fsync: true });
    expect(sync).toHaveBeenCalledTimes(2);
  });

  it("without fsync, syncs neither the file nor its directory", async () => {
    const dir = await tempDir();
    const sync = await spyOnFileSyncs(dir);
    await writeFileAtomically(join(dir, "head.json"), "x", { fsync: false });
    expect(sync).not.toHaveBeenCalled();
  });

  it("with exclusive, creates a missing file and leaves no temporary file", async () => {
    const dir = await tempDir();
    const path = join(dir, "record.json");
    expect(await writeFileAtomically(path, "first", { fsync: true, exclusive: true })).toBe(true);
    expect(await readFile(path, "utf8")).toBe("first");
    expect(await readdir(dir)).toEqual(["record.json"]);
  });

  it("with exclusive, resolves to false and leaves an existing file untouched", async () => {
    const dir = await tempDir();
    const path = join(dir, "record.json");
    await writeFile(path, "first");
    expect(await writeFileAtomically(path, "second", { fsync: true, exclusive: true })).toBe(false);
    expect(await readFile(path, "utf8")).toBe("first");
    expect(await readdir(dir)).toEqual(["record.json"]);
  });

  it("with exclusive, lets exactly one of many concurrent writers of one path win", async () => {
    const dir = await tempDir();
    const path = join(dir, "record.json");
    const writers = Array.from({ length: 8 }, (_, i) =>
      writeFileAtomically(path, `writer ${i}`, { fsync: false, exclusive: true }),
    );
    const results = await Promise.all(writers);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await readFile(path, "utf8")).toBe(`writer ${results.indexOf(true)}`);
    expect(await readdir(dir)).toEqual(["record.json"]);
  });

  it("fails when the directory does not exist, creating nothing", async () => {
    const dir = await tempDir();
    await expect(writeFileAtomically(join(dir, "missing", "head.json"), "x", { fsync: true })).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(await readdir(dir)).toEqual([]);
  });

  it("removes its temporary file when the move into place fails", async () => {
    const dir = await tempDir();
    const path = join(dir, "taken");
    await mkdir(path);
    await writeFile(join(path, "inside"), ""); // a non-empty directory cannot be replaced by a file
    await expect(writeFileAtomically(path, "x", { fsync: true })).rejects.toMatchObject({ code: "EISDIR" });
    expect(await readdir(dir)).toEqual(["taken"]);
  });
});
