import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { appendFile, mkdir, rename, rm, symlink, truncate, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { appendChunkLines, chunkLine } from "../../stores/file/chunk-file.js";
import { ChunkFileWatcher } from "../../stores/file/chunk-watcher.js";
import { chunk } from "./chunk-factory.js";
import { QUIET_MS } from "./conformance-chunks.js";
import { openFilesUnder, osWatchesOn, useTempDirs } from "./file-fixtures.js";
import { eventually, sleep } from "./snapshot-factory.js";

// The watcher of one chunk log file (stores/file/chunk-watcher.ts) on its own, on real files:
// what counts as a change (complete lines only, removal, emptying), when it checks (OS watcher,
// poll, `changed`), when it is active, and that it stops and holds nothing once closed.
// Negative checks wait QUIET_MS after the check that could have reported (see conformance-chunks.ts).

const tempDir = useTempDirs("agentd-chunk-watcher-");
const NAME = "bg.jsonl";
const line = (sequence: number): string => chunkLine(sequence, JSON.stringify(chunk(sequence).chunk));

/** A started watcher of `<dir>/bg.jsonl` whose reported changes are counted. */
interface Watched {
  watcher: ChunkFileWatcher;
  readonly changes: number;
  /** Resolves once `n` changes were reported; rejects after `timeoutMs`. */
  untilChanges(n: number, timeoutMs?: number): Promise<void>;
}

const open: ChunkFileWatcher[] = [];
afterEach(() => {
  for (const watcher of open.splice(0)) watcher.close();
});

/**
 * A watcher of `<dir>/bg.jsonl` (its baseline taken now), started unless `start` is false: an
 * unstarted watcher has neither OS watcher nor poll, only `changed` makes it check. `onChange`
 * runs after each counted change.
 */
function watchLog(dir: string, { pollIntervalMs = 0, start = true, onChange = () => {} }: WatchOptions = {}): Watched {
  let changes = 0;
  const watcher = new ChunkFileWatcher(dir, NAME, pollIntervalMs, () => onChange(++changes));
  open.push(watcher);
  if (start) watcher.start();
  return {
    watcher,
    get changes() {
      return changes;
    },
    async untilChanges(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (changes < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} change(s) within ${timeoutMs} ms, got ${changes}`);
        await sleep(10);
      }
    },
  };
}

interface WatchOptions {
  pollIntervalMs?: number;
  start?: boolean;
  onChange?: (changes: number) => void;
}

describe("ChunkFileWatcher: what counts as a change", () => {
  it("reports an append by another writer through the OS watcher alone (no poll)", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir);
    await appendFile(join(dir, NAME), line(1));
    await watched.untilChanges(1);
  });

  it("does not report a log whose last line is incomplete, then reports it once complete", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir);
    const [start, rest] = [line(1).slice(0, 20), line(1).slice(20)];
    await appendFile(join(dir, NAME), start);
    watched.watcher.changed();
    await sleep(QUIET_MS);
    expect(watched.changes).toBe(0);
    await appendFile(join(dir, NAME), rest);
    watched.watcher.changed();
    await watched.untilChanges(1);
  });

  it("does not report a log created empty (its first line not yet written)", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir);
    await writeFile(join(dir, NAME), "");
    watched.watcher.changed();
    await sleep(QUIET_MS);
    expect(watched.changes).toBe(0);
  });

  it("does not report a log that was already empty when watching began and still is", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, NAME), "");
    const watched = watchLog(dir);
    watched.watcher.changed();
    await sleep(QUIET_MS);
    expect(watched.changes).toBe(0);
  });

  it("does not report a log that is still missing", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir);
    watched.watcher.changed();
    await sleep(QUIET_MS);
    expect(watched.changes).toBe(0);
  });

  it("reports a log cut to empty", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, NAME), line(1));
    const watched = watchLog(dir);
    await truncate(join(dir, NAME), 0);
    watched.watcher.changed();
    await watched.untilChanges(1);
  });

  it("reports the removal of a watched log", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, NAME), line(1));
    const watched = watchLog(dir);
    await unlink(join(dir, NAME));
    watched.watcher.changed();
    await watched.untilChanges(1);
  });

  it("does not report a log it cannot open for another reason than its absence", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, NAME), line(1));
    const watched = watchLog(dir);
    await symlink(NAME, join(dir, "loop")); // renamed to bg.jsonl: a link to itself (ELOOP)
    await rename(join(dir, "loop"), join(dir, NAME));
    watched.watcher.changed();
    await sleep(QUIET_MS);
    expect(watched.changes).toBe(0);
  });

  it("reports a log completed after a baseline taken mid-append, even when it has the torn size", async () => {
    const dir = await tempDir();
    const log = join(dir, NAME);
    // A torn line as long as the line that replaces it: the log's size stays; its content is complete.
    await writeFile(log, line(1) + line(2).slice(0, -1) + "x");
    const watched = watchLog(dir, { start: false }); // no OS watcher: no check sees the append half done
    await appendChunkLines(log, line(2), false);
    watched.watcher.changed();
    await watched.untilChanges(1);
  });
});

describe("ChunkFileWatcher: when it checks", () => {
  it("checks the log at once when told it changed, with neither OS watcher nor poll", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir, { start: false });
    await writeFile(join(dir, NAME), line(1));
    watched.watcher.changed();
    await watched.untilChanges(1);
  });

  it("reports a change made while a check is under way, once that check is done", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir, {
      start: false,
      onChange: (changes) => {
        if (changes > 1) return;
        appendFileSync(join(dir, NAME), line(2)); // the check reporting line 1 is still running
        watched.watcher.changed();
      },
    });
    await writeFile(join(dir, NAME), line(1));
    watched.watcher.changed();
    await watched.untilChanges(2);
  });

  it("reports nothing once closed, even from a check already under way", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir);
    appendFileSync(join(dir, NAME), line(1));
    watched.watcher.changed();
    watched.watcher.close();
    await sleep(QUIET_MS);
    expect(watched.changes).toBe(0);
  });
});

describe("ChunkFileWatcher: resources", () => {
  it("is active with the OS watcher alone when the poll is off", async () => {
    expect(watchLog(await tempDir(), { pollIntervalMs: 0 }).watcher.active).toBe(true);
  });

  it("is active with the poll alone while its directory does not exist", async () => {
    expect(watchLog(join(await tempDir(), "missing"), { pollIntervalMs: 60_000 }).watcher.active).toBe(true);
  });

  it("is inactive with neither a directory nor a poll", async () => {
    expect(watchLog(join(await tempDir(), "missing"), { pollIntervalMs: 0 }).watcher.active).toBe(false);
  });

  it("is inactive once closed", async () => {
    const { watcher } = watchLog(await tempDir(), { pollIntervalMs: 60_000 });
    watcher.close();
    expect(watcher.active).toBe(false);
  });

  it("watches a directory removed and made again at the same path with the OS watcher once its poll sees it", async () => {
    // ext4 often gives the new directory the old one's inode number: the birth time tells them apart.
    const dir = join(await tempDir(), "session");
    await mkdir(dir);
    watchLog(dir, { pollIntervalMs: 50 });
    expect(await osWatchesOn(dir)).toBe(1);
    await rm(dir, { recursive: true });
    await mkdir(dir);
    await eventually(async () => (await osWatchesOn(dir)) === 1, 5_000);
  });

  it("holds no file of the log open after taking its baseline", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, NAME), line(1));
    watchLog(dir, { start: false });
    expect(await openFilesUnder(dir)).toEqual([]);
  });

  it("holds no file of the log open once a check is done", async () => {
    const dir = await tempDir();
    const watched = watchLog(dir, { start: false });
    await writeFile(join(dir, NAME), line(1));
    watched.watcher.changed();
    await watched.untilChanges(1);
    expect(await openFilesUnder(dir)).toEqual([]);
  });

  it("lets the process exit while watching (neither the OS watcher nor the poll keeps it alive)", async () => {
    const dir = await tempDir();
    const source = fileURLToPath(new URL("../../stores/file/chunk-watcher.ts", import.meta.url));
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const script = `
      const { ChunkFileWatcher } = await import(${JSON.stringify(pathToFileURL(source).href)});
      const watcher = new ChunkFileWatcher(${JSON.stringify(dir)}, "bg.jsonl", 50, () => {});
      watcher.start();
      console.log(watcher.active ? "watching" : "not watching");`;
    const child = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script]);
    let out = "";
    child.stdout.on("data", (data: Buffer) => (out += data.toString()));
    const timer = setTimeout(() => child.kill(), 20_000);
    const code = await new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode)));
    clearTimeout(timer);
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: "watching" });
  });
});
