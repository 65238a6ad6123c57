import { mkdir, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureStoreFormat } from "../../stores/file/store-format.js";
import { openFilesUnder, useTempDirs } from "./file-fixtures.js";
import type { AgentError } from "../../src/errors/agent-error.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

// The store format check of file store directories (stores/file/store-format.ts): the marker
// `agentd-store.json`, and what makes a directory unusable.

const tempDir = useTempDirs("agentd-store-format-");

/** The FAILED_PRECONDITION AgentError ensureStoreFormat throws for `dir` (fails the test on anything else). */
const formatError = (dir: string, create: boolean): AgentError =>
  expectThrowsAgentError(() => ensureStoreFormat(dir, create), "FAILED_PRECONDITION");

describe("ensureStoreFormat", () => {
  it("creates a missing directory (mode 0700) with a format-3 marker when create is set", async () => {
    const dir = join(await tempDir(), "store");
    expect(ensureStoreFormat(dir, true)).toBe(true);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readFile(join(dir, "agentd-store.json"), "utf8")).toBe('{"format":3}\n');
    expect(await readdir(dir)).toEqual(["agentd-store.json"]);
  });

  it("resolves to false and creates nothing for a missing directory without create", async () => {
    const parent = await tempDir();
    expect(ensureStoreFormat(join(parent, "store"), false)).toBe(false);
    expect(await readdir(parent)).toEqual([]);
  });

  it("fails with FAILED_PRECONDITION when the directory cannot be created, with the error as cause", async () => {
    const file = join(await tempDir(), "not-a-directory");
    await writeFile(file, "");
    for (const create of [true, false]) {
      const error = formatError(file, create);
      expect(error).toMatchObject({
        status: "FAILED_PRECONDITION",
        message: expect.stringContaining(`store directory ${file} cannot be created: EEXIST`),
      });
      expect(error.cause).toMatchObject({ code: "EEXIST" });
    }
  });

  it("fails with FAILED_PRECONDITION when the marker exists but cannot be read, with the error as cause", async () => {
    const dir = await tempDir();
    const marker = join(dir, "agentd-store.json");
    await mkdir(marker);
    const error = formatError(dir, true);
    expect(error).toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining(`store marker ${marker} cannot be read: EISDIR`),
    });
    expect(error.cause).toMatchObject({ code: "EISDIR" });
  });

  it("names the marker of another format as the evidence, and says the data is not converted", async () => {
    const dir = await tempDir();
    const marker = join(dir, "agentd-store.json");
    await writeFile(marker, JSON.stringify({ format: 4 }));
    expect(formatError(dir, true)).toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining(`store format 4 (marker ${marker}); this agentd reads format 3.`),
      details: { directory: dir, foundFormat: 4, expectedFormat: 3 },
    });
    expect(formatError(dir, true).message).toMatch(
      /keep this one for the agentd release that wrote it; its data is not converted automatically\.$/,
    );
  });

  it("names the command that converts a format-2 directory", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "agentd-store.json"), JSON.stringify({ format: 2 }));
    expect(formatError(dir, true)).toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringMatching(
        new RegExp(
          `store format 2 .*this agentd reads format 3\\. Stop every agentd using it and convert it with: agentd upgrade-store ${dir}$`,
        ),
      ),
      details: { foundFormat: 2, expectedFormat: 3 },
    });
  });

  it("reports an unreadable marker as format unknown and says how to restore it", async () => {
    const dir = await tempDir();
    const marker = join(dir, "agentd-store.json");
    for (const text of ["garbage", '{"format":"3"}', '{"format":3.5}']) {
      await writeFile(marker, text);
      expect(formatError(dir, true), text).toMatchObject({
        status: "FAILED_PRECONDITION",
        message: expect.stringContaining(
          `store format unknown (unreadable marker ${marker}; if the directory holds format-3 data, restore or rewrite it as {"format":3})`,
        ),
        details: { foundFormat: "unknown" },
      });
      expect(await readFile(marker, "utf8")).toBe(text);
    }
  });

  it("names a format-1 session index directory as the evidence when there is no marker", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, ".sessions"));
    expect(formatError(dir, true)).toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining(`store format 1 (format-1 session index ${join(dir, ".sessions")});`),
      details: { foundFormat: 1 },
    });
  });

  it("names a JSON file of another format as the evidence when there is no marker, and closes it", async () => {
    const dir = await tempDir();
    const old = join(dir, "abc.json");
    await writeFile(old, `{"format":1,"version":1,"snapshot":{}}`);
    expect(formatError(dir, true)).toMatchObject({
      status: "FAILED_PRECONDITION",
      message: expect.stringContaining(`store format 1 (snapshot file ${old});`),
    });
    expect(await openFilesUnder(dir)).toEqual([]);
  });

  it("marks a directory without a marker whose JSON files are of the current format", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "abc.json"), `{"format":3,"note":"not agentd's, but of the current format"}`);
    expect(ensureStoreFormat(dir, true)).toBe(true);
    expect(await readFile(join(dir, "agentd-store.json"), "utf8")).toBe('{"format":3}\n');
    expect(await openFilesUnder(dir)).toEqual([]);
  });

  it("ignores files not named .json when looking for data of another format", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "abc.txt"), `{"format":1,"version":1,"snapshot":{}}`);
    expect(ensureStoreFormat(dir, true)).toBe(true);
    expect(await readdir(dir)).toEqual(["abc.txt", "agentd-store.json"]);
  });

  it("ignores entries that are not regular files (a symlink to old-format data) when looking for another format", async () => {
    const parent = await tempDir();
    const dir = join(parent, "store");
    await mkdir(dir);
    await writeFile(join(parent, "elsewhere"), `{"format":1,"version":1,"snapshot":{}}`);
    await symlink(join(parent, "elsewhere"), join(dir, "abc.json"));
    expect(ensureStoreFormat(dir, true)).toBe(true);
    expect(await readdir(dir)).toEqual(["abc.json", "agentd-store.json"]);
  });
});
