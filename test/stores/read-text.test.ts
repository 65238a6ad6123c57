import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readTextIfExists } from "../../stores/file/read-text.js";
import { useTempDirs } from "./file-fixtures.js";

// How the file store reads a whole file that may not exist (stores/file/read-text.ts).

const tempDir = useTempDirs("agentd-read-text-");

describe("readTextIfExists", () => {
  it("resolves to the file's UTF-8 text", async () => {
    const path = join(await tempDir(), "head.json");
    await writeFile(path, "zürich");
    expect(await readTextIfExists(path)).toBe("zürich");
  });

  it("resolves to undefined when the file does not exist", async () => {
    expect(await readTextIfExists(join(await tempDir(), "missing.json"))).toBeUndefined();
  });

  it("fails with any other error instead of reading the file as missing", async () => {
    const path = join(await tempDir(), "head.json");
    await mkdir(path);
    await expect(readTextIfExists(path)).rejects.toMatchObject({ code: "EISDIR" });
  });
});
