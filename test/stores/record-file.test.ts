import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecordFile, readRecordHeader, recordFileText, recordJson } from "../../stores/file/record-file.js";
import type { SnapshotRecord } from "../../stores/snapshot-store.js";
import { useTempDirs } from "./file-fixtures.js";
import { checkpointRecord, pendingRecord } from "./snapshot-factory.js";

// Record files of the file store (stores/file/record-file.ts): their text, and how whole files and
// their 1 KiB headers are read back.

const tempDir = useTempDirs("agentd-record-file-");

describe("recordJson", () => {
  it("fails with RESOURCE_EXHAUSTED naming the snapshot when the record cannot be serialized as one string", () => {
    let state: unknown = 0;
    for (let i = 0; i < 200_000; i++) state = [state]; // deeper than JSON.stringify can go
    const record = { ...checkpointRecord("s1", "snap-deep"), checkpoint: state } as SnapshotRecord<unknown>;
    let error: unknown;
    try {
      recordJson(record);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({
      status: "RESOURCE_EXHAUSTED",
      message: expect.stringMatching(/^snapshot snap-deep is too large to store as one file \(.+\)$/),
    });
    expect((error as Error).cause).toBeInstanceOf(RangeError);
  });

  it("passes on any other serialization error unchanged", () => {
    const state: { self?: unknown } = {};
    state.self = state;
    const record = { ...checkpointRecord("s1", "snap-cyclic"), checkpoint: state } as SnapshotRecord<unknown>;
    expect(() => recordJson(record)).toThrow(TypeError);
  });
});

describe("readRecordFile", () => {
  it("reads back the record, version and status of a record file", async () => {
    const path = join(await tempDir(), "snap-1.json");
    const record = pendingRecord("s1", "snap-1");
    await writeFile(path, recordFileText(3, "pending", recordJson(record)));
    expect(await readRecordFile(path, "snap-1")).toEqual({ version: 3, status: "pending", record });
  });

  it("reads a file that is not JSON as DATA_LOSS saying so, with the parse error as cause", async () => {
    const path = join(await tempDir(), "snap-1.json");
    await writeFile(path, '{"format":2,"version":1,');
    let error: unknown;
    try {
      await readRecordFile(path, "snap-1");
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({
      status: "DATA_LOSS",
      message: `record file ${path} is not a valid agentd record (not JSON); restore it from a backup`,
    });
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
  });
});

describe("readRecordHeader", () => {
  it("reads the version and status from the start of a record file", async () => {
    const path = join(await tempDir(), "snap-1.json");
    await writeFile(path, recordFileText(7, "completed", recordJson(checkpointRecord("s1", "snap-1"))));
    expect(await readRecordHeader(path)).toEqual({ version: 7, status: "completed" });
  });

  it("resolves to undefined when the file does not exist", async () => {
    expect(await readRecordHeader(join(await tempDir(), "missing.json"))).toBeUndefined();
  });

  it("reads a file without a record header in its first 1 KiB as DATA_LOSS saying so", async () => {
    const dir = await tempDir();
    const texts = ["", "garbage", `${" ".repeat(1024)}${recordFileText(1, "completed", "{}")}`];
    for (const [i, text] of texts.entries()) {
      const path = join(dir, `snap-${i}.json`);
      await writeFile(path, text);
      await expect(readRecordHeader(path), text.slice(0, 20)).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: `record file ${path} is not a valid agentd record (no record header in its first 1 KiB); restore it from a backup`,
      });
    }
  });
});
