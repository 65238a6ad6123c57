import { lstat, readFile, realpath, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { StoredChunk } from "../../stores/chunk-log.js";
import {
  appendChunkLines,
  chunkLine,
  ChunkFileReader,
  readKeepUntil,
  writeKeepUntil,
} from "../../stores/file/chunk-file.js";
import { expectAgentError } from "../harness/agent-error-expectations.js";
import { chunk, chunks } from "./chunk-factory.js";
import { openFilesUnder, recordFileSyncs, selfLink, useTempDirs } from "./file-fixtures.js";
import { sleep } from "./snapshot-factory.js";

// One chunk log file (stores/file/chunk-file.ts) on its own: the append (torn-line cut, fsync),
// the keep-until file, and the reader's line index (read blocks, corrupt lines, which indexes it
// keeps). The file store's use of it is specified in file-chunks.test.ts and the conformance suite.

const tempDir = useTempDirs("agentd-chunk-file-");

/** The lines of `stored`, as an append writes them. */
const linesOf = (stored: readonly StoredChunk[]): string =>
  stored.map((c) => chunkLine(c.sequence, JSON.stringify(c.chunk))).join("");

/** A chunk line of exactly `length` bytes (newline included), its chunk `{"text":"xx…"}`. */
function lineOfLength(sequence: number, length: number): string {
  const pad = length - chunkLine(sequence, '{"text":""}').length;
  if (pad < 0) throw new Error(`a line of sequence ${sequence} needs at least ${length - pad} bytes`);
  return chunkLine(sequence, `{"text":"${"x".repeat(pad)}"}`);
}

/** Lines numbered 1, 2, … the k-th ending (just after its newline) at offset `ends[k]`. */
const linesEndingAt = (ends: readonly number[]): string =>
  ends.map((end, i) => lineOfLength(i + 1, end - (ends[i - 1] ?? 0))).join("");

/** Offsets every `step` bytes up to `to` (but those within 100 bytes of a mark), plus `marks`. */
const offsets = (to: number, step: number, marks: number[] = []): number[] =>
  [
    ...Array.from({ length: Math.floor(to / step) }, (_, i) => (i + 1) * step).filter((offset) =>
      marks.every((mark) => Math.abs(mark - offset) >= 100),
    ),
    ...marks,
  ].sort((a, b) => a - b);

/** The bytes of a line cut off mid-append: a line of sequence `sequence` without its end, `length` bytes long. */
const tornLine = (sequence: number, length: number): string => lineOfLength(sequence, length + 3).slice(0, length);

/**
 * Rewrites every line in place with its keys swapped (`{"chunk":…,"sequence":N}`): the same
 * bytes count, the same chunks when parsed, but no longer indexable. A read through an index
 * built before still returns the chunks; a read that indexes the file afresh is DATA_LOSS.
 */
async function swapKeysInPlace(path: string): Promise<void> {
  const text = await readFile(path, "utf8");
  await writeFile(path, text.replace(/^\{"sequence":(\d+),"chunk":(.*)\}$/gm, '{"chunk":$2,"sequence":$1}'));
}

describe("appendChunkLines", () => {
  it("cuts a torn last line longer than its 64 KiB scan block before appending", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, linesOf(chunks(1, 3)) + tornLine(4, 100_000));
    await appendChunkLines(path, linesOf([chunk(4)]), false);
    expect(await readFile(path, "utf8")).toBe(linesOf(chunks(1, 4)));
  });

  it("cuts a torn last line right after the newline that starts its scan block", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    // 65_535 torn bytes: the last newline is the first byte of the 64 KiB block read last.
    await writeFile(path, linesOf(chunks(1, 3)) + tornLine(4, 65_535));
    await appendChunkLines(path, linesOf([chunk(4)]), false);
    expect(await readFile(path, "utf8")).toBe(linesOf(chunks(1, 4)));
  });

  it("fsyncs the lines and the directory entry of a log it creates", async () => {
    const dir = await realpath(await tempDir());
    const path = join(dir, "bg.jsonl");
    const syncs = await recordFileSyncs(dir);
    await appendChunkLines(path, linesOf([chunk(1)]), true);
    expect(syncs).toEqual({ synced: [dir], datasynced: [path] });
  });

  it("fsyncs only the lines when appending to a log that exists", async () => {
    const dir = await realpath(await tempDir());
    const path = join(dir, "bg.jsonl");
    await writeFile(path, linesOf([chunk(1)]));
    const syncs = await recordFileSyncs(dir);
    await appendChunkLines(path, linesOf([chunk(2)]), true);
    expect(syncs).toEqual({ synced: [], datasynced: [path] });
  });

  it("fsyncs nothing with fsync off, even for a log it creates", async () => {
    const dir = await tempDir();
    const syncs = await recordFileSyncs(dir);
    await appendChunkLines(join(dir, "bg.jsonl"), linesOf([chunk(1)]), false);
    expect(syncs).toEqual({ synced: [], datasynced: [] });
  });

  it("holds the log open no longer than the append", async () => {
    const dir = await tempDir();
    await appendChunkLines(join(dir, "bg.jsonl"), linesOf([chunk(1)]), false);
    expect(await openFilesUnder(dir)).toEqual([]);
  });
});

describe("keep-until files", () => {
  it("rejects reading a keep-until through a keep file it cannot look at, rather than taking the log's time", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "bg.jsonl"), linesOf([chunk(1)]));
    await selfLink(join(dir, "bg.keep"));
    await expect(readKeepUntil(join(dir, "bg.keep"), join(dir, "bg.jsonl"))).rejects.toMatchObject({ code: "ELOOP" });
  });

  it("moves the time of an existing keep file in place, without replacing the file", async () => {
    const keep = join(await tempDir(), "bg.keep");
    await writeKeepUntil(keep, 1_000_000, false);
    const { ino } = await stat(keep);
    await writeKeepUntil(keep, 2_000_000, false);
    expect(await stat(keep)).toMatchObject({ ino, mtimeMs: 2_000_000 });
  });

  it("leaves the keep file untouched when extending it to the time it already has", async () => {
    const keep = join(await tempDir(), "bg.keep");
    await writeKeepUntil(keep, 5_000_000, false);
    const before = await stat(keep, { bigint: true });
    await sleep(50); // a touch now would show in the change time
    await writeKeepUntil(keep, 5_000_000, true);
    expect((await stat(keep, { bigint: true })).ctimeNs).toBe(before.ctimeNs);
  });

  it("rejects setting a keep-until through a keep file it cannot resolve, leaving the file as it is", async () => {
    const keep = join(await tempDir(), "bg.keep");
    await selfLink(keep);
    await expect(writeKeepUntil(keep, 5_000_000, false)).rejects.toMatchObject({ code: "ELOOP" });
    expect((await lstat(keep)).isSymbolicLink()).toBe(true);
  });
});

describe("ChunkFileReader", () => {
  it("returns nothing for a log that holds only a torn line", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, tornLine(1, 40));
    expect(await new ChunkFileReader().read(path, 0, 10)).toEqual([]);
  });

  it("rejects a read of a log it cannot open for another reason than its absence", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await selfLink(path);
    await expect(new ChunkFileReader().read(path, 0, 10)).rejects.toMatchObject({ code: "ELOOP" });
  });

  it("holds the log open no longer than each read", async () => {
    const dir = await tempDir();
    const path = join(dir, "bg.jsonl");
    await writeFile(path, linesOf(chunks(1, 3)));
    const reader = new ChunkFileReader();
    expect(await reader.read(path, 1, 10)).toEqual(chunks(2, 3));
    expect(await reader.read(path, 3, 10)).toEqual([]);
    expect(await openFilesUnder(dir)).toEqual([]);
  });

  it("indexes lines across its 256 KiB read blocks, one ending on a block's first byte, one starting just before a block", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    // 262_145: the newline is byte 0 of the second block; 524_278: the next line's start straddles the third.
    const ends = offsets(600_000, 1000, [262_145, 524_278]);
    await writeFile(path, linesEndingAt(ends));
    const read = await new ChunkFileReader().read(path, 0, 10_000);
    expect(read.map((c) => c.sequence)).toEqual(ends.map((_, i) => i + 1));
    expect(await new ChunkFileReader().read(path, 263, 2)).toEqual(
      [264, 265].map((sequence) => JSON.parse(lineOfLength(sequence, ends[sequence - 1]! - ends[sequence - 2]!))),
    );
  });

  it("ignores a torn last line of a log longer than one read block", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    // The last block read holds 5000 bytes of the torn line; the block's stale byte 5000 is a newline.
    const ends = offsets(262_000, 1000, [5001]);
    await writeFile(path, linesEndingAt(ends) + tornLine(ends.length + 1, 262_144 + 5000 - 262_000));
    const read = await new ChunkFileReader().read(path, 0, 10_000);
    expect(read.map((c) => c.sequence)).toEqual(ends.map((_, i) => i + 1));
  });

  it("reports DATA_LOSS naming line 1 for a log that starts with an empty line", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, `\n${linesOf([chunk(1)])}`);
    await expectAgentError(
      new ChunkFileReader().read(path, 0, 10),
      "DATA_LOSS",
      'line 1 does not start with {"sequence":N,',
    );
  });

  it(
    "reports DATA_LOSS for a line whose sequence prefix and parsed sequence disagree",
    { timeout: 10_000 },
    async () => {
      const path = join(await tempDir(), "bg.jsonl");
      // Indexed as sequence 2, parsed as 3 (JSON keeps the last duplicate key): a re-read cannot help.
      await writeFile(path, `${linesOf([chunk(1)])}{"sequence":2,"chunk":{"a":2},"sequence":3}\n`);
      await expectAgentError(
        new ChunkFileReader().read(path, 0, 10),
        "DATA_LOSS",
        /its lines changed while being read/,
      );
    },
  );

  it("keeps the JSON error as the cause of the DATA_LOSS for a line that is not JSON", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, '{"sequence":1,"chunk":{oops}}\n');
    const error = await expectAgentError(new ChunkFileReader().read(path, 0, 10), "DATA_LOSS", /not JSON/);
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it("reports DATA_LOSS for a line without a chunk", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, '{"sequence":1,"text":"no chunk"}\n');
    await expectAgentError(new ChunkFileReader().read(path, 0, 10), "DATA_LOSS", /a line has no sequence or chunk/);
  });

  it("reads an unchanged file through the line index it built before", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, linesOf(chunks(1, 3)));
    const reader = new ChunkFileReader();
    expect(await reader.read(path, 0, 10)).toEqual(chunks(1, 3));
    await swapKeysInPlace(path);
    expect(await reader.read(path, 1, 10)).toEqual(chunks(2, 3));
  });

  it("indexes a file afresh once it is shorter than its index", async () => {
    const path = join(await tempDir(), "bg.jsonl");
    await writeFile(path, linesOf(chunks(1, 2)));
    const reader = new ChunkFileReader();
    expect(await reader.read(path, 0, 10)).toEqual(chunks(1, 2));
    await writeFile(path, linesOf([chunk(1)])); // the same file, cut after its first line
    await swapKeysInPlace(path);
    await expectAgentError(reader.read(path, 0, 1), "DATA_LOSS", /line 1 does not start/);
  });

  it("drops the index of the least recently read file once more than maxFiles files were read", async () => {
    const dir = await tempDir();
    const [a, b, c] = ["a", "b", "c"].map((name) => join(dir, `${name}.jsonl`));
    const reader = new ChunkFileReader(2);
    for (const path of [a!, b!, c!]) {
      await writeFile(path, linesOf(chunks(1, 2)));
      expect(await reader.read(path, 0, 10)).toEqual(chunks(1, 2));
    }
    await swapKeysInPlace(a!);
    await expectAgentError(reader.read(a!, 0, 10), "DATA_LOSS", /line 1 does not start/);
  });

  it("keeps the index of the file read most recently when it drops one", async () => {
    const dir = await tempDir();
    const [a, b, c] = ["a", "b", "c"].map((name) => join(dir, `${name}.jsonl`));
    const reader = new ChunkFileReader(2);
    for (const path of [a!, b!, c!]) await writeFile(path, linesOf(chunks(1, 2)));
    for (const path of [a!, b!, a!, c!]) expect(await reader.read(path, 0, 10)).toEqual(chunks(1, 2));
    await swapKeysInPlace(a!);
    expect(await reader.read(a!, 0, 10)).toEqual(chunks(1, 2));
  });
});
