import { appendFile, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sweepDebris } from "../../stores/file/debris-sweep.js";
import { findStoreDirectories } from "../../stores/file/session-files.js";
import { sessionKey, StoreLayout } from "../../stores/file/store-layout.js";
import { sanitizePathPrefix } from "../../stores/file/path-prefix.js";
import { expectAgentError } from "../harness/agent-error-expectations.js";
import { chunk, chunks } from "./chunk-factory.js";
import { HOUR, startWatch } from "./conformance-chunks.js";
import { age, useFileStores, useTempDirs } from "./file-fixtures.js";

// The file store's chunk logs beyond the conformance suite: the files themselves (layout, modes,
// keep-until), torn and corrupt lines, the reader's line index, the watcher's OS-watcher and poll
// paths, tenant directories, and what the debris sweep and directory scans make of chunks/.

const tempDir = useTempDirs("agentd-file-chunks-");
const open = useFileStores();

const BG = { sessionId: "s1", snapshotId: "bg" };
const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe("file store chunk logs: files", () => {
  it("keeps a log in chunks/<session key>/<snapshotId>.jsonl, one JSON line per chunk, its keep-until as <snapshotId>.keep's mtime", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, chunks(1, 2), K);
    await store.appendChunks(BG, [chunk(3)], K + 1);
    const layout = new StoreLayout(dir);
    const logDir = join(dir, "chunks", sessionKey("s1"));
    expect(layout.chunkLogPath("s1", "bg")).toBe(join(logDir, "bg.jsonl"));
    expect((await readdir(logDir)).sort()).toEqual(["bg.jsonl", "bg.keep"]);
    const lines = (await readFile(join(logDir, "bg.jsonl"), "utf8")).split("\n");
    expect(lines.pop()).toBe(""); // ends with a newline
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(chunks(1, 3));
    expect(lines[0]).toMatch(/^\{"sequence":1,"chunk":/);
    expect(await readFile(join(logDir, "bg.keep"), "utf8")).toBe("");
    expect((await stat(join(logDir, "bg.keep"))).mtime.getTime()).toBe(K + 1);
    for (const d of [join(dir, "chunks"), logDir]) expect(await mode(d)).toBe(0o700);
    for (const f of ["bg.jsonl", "bg.keep"]) expect(await mode(join(logDir, f))).toBe(0o600);
  });

  it("ignores a torn last line (a crash mid-append) and never returns a half chunk", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    const path = new StoreLayout(dir).chunkLogPath("s1", "bg");
    await appendFile(path, '{"sequence":3,"chunk":{"sequence":3,"modelChunk":{"ro');
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(1, 2));
    expect(await store.readChunks(BG, 2, 10)).toEqual([]);
    expect(await store.hasChunks(BG)).toBe(true);
  });

  it("cuts a torn last line off before the next append", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    const path = new StoreLayout(dir).chunkLogPath("s1", "bg");
    await appendFile(path, '{"sequence":3,"chunk":{"sequence":3,"modelChunk":{"ro');
    await store.appendChunks(BG, [chunk(3)], Date.now() + HOUR);
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(1, 3));
    expect((await readFile(path, "utf8")).split("\n").filter(Boolean)).toHaveLength(3);
  });

  it("cuts a log that is only a torn line down to nothing before the next append", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const path = new StoreLayout(dir).chunkLogPath("s1", "bg");
    await writeFile(path, '{"sequence":1,"chu');
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    expect(await store.readChunks(BG, 0, 10)).toEqual([chunk(1)]);
  });

  it("reads a complete line that is not a chunk line as DATA_LOSS naming the file", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const path = new StoreLayout(dir).chunkLogPath("s1", "bg");
    await appendFile(path, "garbage\n");
    await expectAgentError(store.readChunks(BG, 0, 10), "DATA_LOSS", path);
    await writeFile(path, '{"sequence":1,"chunk":{"a":1}}\n{"sequence":2,"chunk":{oops}\n');
    await expectAgentError(store.readChunks(BG, 0, 10), "DATA_LOSS", /not JSON/);
  });

  it("returns the new chunks of a growing log read after each append", async () => {
    const dir = await tempDir();
    const store = open(dir);
    let after = 0;
    for (let sequence = 1; sequence <= 40; sequence += 2) {
      await store.appendChunks(BG, chunks(sequence, sequence + 1), Date.now() + HOUR);
      const read = await store.readChunks(BG, after, 100);
      expect(read).toEqual(chunks(after + 1, sequence + 1));
      after = sequence + 1;
    }
    expect(await store.readChunks(BG, 0, 100)).toEqual(chunks(1, 40));
  });

  it("reads a new log written at the path of a swept one, not the old one's lines", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, chunks(1, 5), K);
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(1, 5)); // indexed
    expect(await store.sweepChunks(K)).toBe(1);
    await store.appendChunks(BG, chunks(7, 8), K + 1);
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(7, 8));
    expect(await store.readChunks(BG, 6, 1)).toEqual([chunk(7)]);
  });

  it("reads a new log another store instance wrote at the path of a swept one (its inode number may be reused)", async () => {
    const dir = await tempDir();
    const reader = open(dir);
    const other = open(dir);
    const K = Date.now() + HOUR;
    await reader.appendChunks(BG, chunks(1, 2), K);
    expect(await reader.readChunks(BG, 0, 10)).toEqual(chunks(1, 2)); // indexed
    expect(await other.sweepChunks(K)).toBe(1);
    await other.appendChunks(BG, chunks(11, 16), K + 1); // longer than what the reader indexed
    expect(await reader.readChunks(BG, 0, 10)).toEqual(chunks(11, 16));
    expect(await reader.readChunks(BG, 12, 2)).toEqual(chunks(13, 14));
  });

  it("reads lines that changed under its line index afresh, never through stale offsets", async () => {
    const dir = await tempDir();
    const store = open(dir);
    await store.appendChunks(BG, chunks(1, 2), Date.now() + HOUR);
    expect(await store.readChunks(BG, 0, 10)).toEqual(chunks(1, 2)); // indexed: sequences 1, 2
    const path = new StoreLayout(dir).chunkLogPath("s1", "bg");
    // Same file, same size, other sequences (5, 6): no append could do this, an operator's edit could.
    const text = await readFile(path, "utf8");
    await writeFile(path, text.replaceAll('"sequence":1', '"sequence":5').replaceAll('"sequence":2', '"sequence":6'));
    const renumbered = (sequence: number, from: number) => ({
      ...chunk(from),
      sequence,
      chunk: { ...chunk(from).chunk, sequence },
    });
    expect(await store.readChunks(BG, 1, 1)).toEqual([renumbered(5, 1)]);
  });
});

describe("file store chunk logs: watching", () => {
  it("wakes a watcher for an append by another store instance on the directory through fs.watch alone (no poll)", async () => {
    const dir = await tempDir();
    const watcher = open(dir, { pollIntervalMs: 0 });
    const writer = open(dir, { pollIntervalMs: 0 });
    const watch = startWatch(watcher, BG);
    try {
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1, 5_000);
    } finally {
      await watch.stop();
    }
  });

  it("wakes a watcher whose session directory was removed and created again, through its poll", async () => {
    const dir = await tempDir();
    const watcher = open(dir, { pollIntervalMs: 50 });
    const writer = open(dir, { pollIntervalMs: 0 });
    const watch = startWatch(watcher, BG);
    try {
      await rm(join(dir, "chunks", sessionKey("s1")), { recursive: true }); // the OS watcher now watches nothing
      await writer.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
      await watch.untilWakes(1, 5_000);
      await writer.appendChunks(BG, [chunk(2)], Date.now() + HOUR);
      await watch.untilWakes(2, 5_000);
    } finally {
      await watch.stop();
    }
  });

  it("keeps a session's chunk directory this process watches when a sweep empties it", async () => {
    const dir = await tempDir();
    const store = open(dir, { pollIntervalMs: 0 });
    const writer = open(dir, { pollIntervalMs: 0 });
    const K = Date.now() + HOUR;
    await store.appendChunks({ sessionId: "s1", snapshotId: "old" }, [chunk(1)], K);
    const watch = startWatch(store, BG);
    try {
      expect(await store.sweepChunks(K)).toBe(1);
      expect(await readdir(join(dir, "chunks"))).toEqual([sessionKey("s1")]);
      await writer.appendChunks(BG, [chunk(1)], K + 1); // reaches the watcher through fs.watch only
      await watch.untilWakes(1, 5_000);
    } finally {
      await watch.stop();
    }
    expect(await store.sweepChunks(K + 1)).toBe(1);
    expect(await readdir(join(dir, "chunks"))).toEqual([]); // unwatched and empty: removed
  });

  it("creates the log's directory for the OS watcher, and removes it with the session", async () => {
    const dir = await tempDir();
    const store = open(dir);
    const watch = startWatch(store, BG);
    await watch.stop();
    expect(await readdir(join(dir, "chunks"))).toEqual([sessionKey("s1")]);
    expect(await store.deleteSession("s1")).toBe(true);
    expect(await readdir(join(dir, "chunks"))).toEqual([]);
  });
});

describe("file store chunk logs: tenant directories", () => {
  it("keeps a tenant's logs under its prefix directory; a sweep without a context covers every tenant", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => (ctx.tenant ? `tenants/${ctx.tenant}` : "") });
    const K = Date.now() + HOUR;
    await store.appendChunks(BG, [chunk(1)], K, { tenant: "acme" });
    await store.appendChunks(BG, [chunk(1)], K, { tenant: "globex" });
    await store.appendChunks(BG, [chunk(1)], K); // the store directory itself
    expect(await readdir(join(dir, "tenants", "acme", "chunks", sessionKey("s1")))).toContain("bg.jsonl");
    expect(await store.sweepChunks(K)).toBe(3);
    for (const ctx of [{ tenant: "acme" }, { tenant: "globex" }, undefined])
      expect(await store.hasChunks(BG, ctx)).toBe(false);
  });

  it("escapes a tenant named like the chunks directory, so it never lands on another directory's logs", () => {
    expect(sanitizePathPrefix("chunks")).toEqual(["%63hunks"]);
    expect(sanitizePathPrefix("Chunks/x")).toEqual(["%43hunks", "x"]);
  });

  it("does not take chunks/ or its session directories for tenant directories", async () => {
    const dir = await tempDir();
    const store = open(dir, { pathPrefix: (ctx) => ctx.tenant ?? "" });
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR, { tenant: "acme" });
    expect((await findStoreDirectories(dir)).sort()).toEqual([dir, join(dir, "acme")]);
    expect(await store.sweepExpired(Date.now())).toBe(0);
    expect(await store.hasChunks(BG)).toBe(true);
  });
});

describe("file store chunk logs: debris", () => {
  it("removes stale temporary keep files under chunks/ (even with no tenant levels to descend) and leaves logs and keep files alone", async () => {
    const dir = await tempDir();
    const store = open(dir, { debrisSweep: { intervalMs: 0 } });
    await store.appendChunks(BG, [chunk(1)], Date.now() + HOUR);
    const logDir = join(dir, "chunks", sessionKey("s1"));
    const tmp = join(logDir, ".bg.keep.0a1b2c3d4e5f.tmp");
    await writeFile(tmp, "");
    await age(tmp, 10 * 60_000);
    await age(join(logDir, "bg.jsonl"), 10 * 60_000);
    // maxDepth 0: no tenant directories below the store; chunks/<session key>/ is still swept.
    expect(await sweepDebris(dir, { tmpMaxAgeMs: 60_000, maxDepth: 0 })).toEqual({ tmpFiles: 1, lockFiles: 0 });
    expect((await readdir(logDir)).sort()).toEqual(["bg.jsonl", "bg.keep"]);
    expect(await store.readChunks(BG, 0, 10)).toEqual([chunk(1)]);
  });
});
