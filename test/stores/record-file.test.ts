import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecordFile, readRecordHeader, recordFileText, recordJson } from "../../stores/file/record-file.js";
import type { SnapshotRecord } from "../../stores/snapshot-store.js";
import { expectAgentError, expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { openFilesUnder, useTempDirs } from "./file-fixtures.js";
import { checkpointRecord, pendingRecord } from "./snapshot-factory.js";

// Record files of the file store (stores/file/record-file.ts): their text, and how whole files and
// their 1 KiB headers are read back.

const tempDir = useTempDirs("agentd-record-file-");

describe("recordJson", () => {
  it("fails with RESOURCE_EXHAUSTED naming the snapshot when the record cannot be serialized as one string", () => {
    let state: unknown = 0;
    for (let i = 0; i < 200_000; i++) state = [state]; // deeper than JSON.stringify can go
    const record = { ...checkpointRecord("s1", "snap-deep"), checkpoint: state } as SnapshotRecord<unknown>;
    const error = expectThrowsAgentError(
      () => recordJson(record),
      "RESOURCE_EXHAUSTED",
      /^snapshot snap-deep is too large to store as one file \(.+\)$/,
    );
    expect(error.cause).toBeInstanceOf(RangeError);
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
    const error = await expectAgentError(readRecordFile(path, "snap-1"), "DATA_LOSS");
    expect(error.message).toBe(`record file ${path} is not a valid agentd record (not JSON); restore it from a backup`);
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it("reads a file of another store format as DATA_LOSS naming the format found", async () => {
    const dir = await tempDir();
    for (const [found, text] of [
      ["1", `{"format":1,"version":1,"snapshot":{"snapshotId":"snap-1"}}`],
      ["undefined", `{"version":1}`],
    ] as const) {
      const path = join(dir, `snap-${found}.json`);
      await writeFile(path, text);
      await expect(readRecordFile(path, "snap-1")).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: `record file ${path} is not a valid agentd record (format ${found}); restore it from a backup`,
      });
    }
  });

  it("reads a file without a numeric version, a string status or a record object as DATA_LOSS saying so", async () => {
    const dir = await tempDir();
    const record = checkpointRecord("s1", "snap-1");
    const texts = [
      JSON.stringify({ format: 2, version: "1", status: "completed", record }),
      JSON.stringify({ format: 2, version: 1, status: 1, record: { ...record, status: 1 } }),
      JSON.stringify({ format: 2, version: 1, status: "completed", record: null }),
      JSON.stringify({ format: 2, version: 1, status: "completed", record: "snap-1" }),
    ];
    for (const [i, text] of texts.entries()) {
      const path = join(dir, `snap-${i}.json`);
      await writeFile(path, text);
      await expect(readRecordFile(path, "snap-1"), text).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: `record file ${path} is not a valid agentd record (missing version, status or record); restore it from a backup`,
      });
    }
  });

  it("reads a file whose header status or ID does not match its record as DATA_LOSS saying so", async () => {
    const dir = await tempDir();
    const texts = [
      recordFileText(1, "pending", recordJson(checkpointRecord("s1", "snap-1"))), // the record is completed
      recordFileText(1, "completed", recordJson(checkpointRecord("s1", "snap-2"))), // renamed into place
    ];
    for (const [i, text] of texts.entries()) {
      const path = join(dir, `snap-${i}.json`);
      await writeFile(path, text);
      await expect(readRecordFile(path, "snap-1"), text).rejects.toMatchObject({
        status: "DATA_LOSS",
        message: `record file ${path} is not a valid agentd record (header does not match the record); restore it from a backup`,
      });
    }
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

  it("fails with the open error when the file cannot be opened for another reason than not existing", async () => {
    const file = join(await tempDir(), "not-a-directory");
    await writeFile(file, "");
    await expect(readRecordHeader(join(file, "snap-1.json"))).rejects.toMatchObject({ code: "ENOTDIR" });
  });

  it("closes the file after reading its header, valid or not", async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, "good.json"),
      recordFileText(1, "completed", recordJson(checkpointRecord("s1", "snap-1"))),
    );
    await writeFile(join(dir, "bad.json"), "garbage");
    await readRecordHeader(join(dir, "good.json"));
    await readRecordHeader(join(dir, "bad.json")).catch(() => undefined);
    expect(await openFilesUnder(dir)).toEqual([]);
  });
});
