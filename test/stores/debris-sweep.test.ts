import { mkdir, readdir, symlink, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sweepDebris } from "../../stores/file/debris-sweep.js";
import { age, deadPid, useTempDirs } from "./file-fixtures.js";

// The removal of crash debris from a file store directory tree (stores/file/debris-sweep.ts):
// what FileSessionStore runs when it opens and on a timer.

const tempDir = useTempDirs("agentd-debris-sweep-");

afterEach(() => {
  vi.useRealTimers();
});

/** Writes `text` at `path` (creating its directory) and ages it by `ageMs`. */
async function put(path: string, ageMs = 0, text = ""): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  if (ageMs > 0) await age(path, ageMs);
  return path;
}

/** A lock file's content naming `pid` as its holder. */
const lockOf = (pid: number) => JSON.stringify({ pid, token: `holder-${pid}` });

const OLD = 10 * 60_000;

describe("sweepDebris: temporary files", () => {
  it("removes temporary files older than tmpMaxAgeMs from records/ and sessions/, counting them", async () => {
    const root = await tempDir();
    await put(join(root, "records", ".snap-1.json.0a1b2c.tmp"), OLD);
    await put(join(root, "sessions", ".k1.head.json.3d4e5f.tmp"), OLD);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 60_000 })).toEqual({ tmpFiles: 2, lockFiles: 0 });
    expect(await readdir(join(root, "records"))).toEqual([]);
    expect(await readdir(join(root, "sessions"))).toEqual([]);
  });

  it("keeps temporary files younger than tmpMaxAgeMs (a writer may still be writing them)", async () => {
    const root = await tempDir();
    await put(join(root, "records", ".snap-1.json.0a1b2c.tmp"), 1_000);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 60_000 })).toEqual({ tmpFiles: 0, lockFiles: 0 });
    expect(await readdir(join(root, "records"))).toEqual([".snap-1.json.0a1b2c.tmp"]);
  });

  it("keeps a temporary file exactly tmpMaxAgeMs old", async () => {
    const root = await tempDir();
    const path = await put(join(root, "records", ".snap-1.json.0a1b2c.tmp"));
    const mtimeSeconds = Math.floor(Date.now() / 1000) - 60;
    await utimes(path, mtimeSeconds, mtimeSeconds);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(mtimeSeconds * 1000 + 30_000);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 30_000 })).toEqual({ tmpFiles: 0, lockFiles: 0 });
    expect(await readdir(join(root, "records"))).toEqual([".snap-1.json.0a1b2c.tmp"]);
  });

  it("removes set-aside copies of an interrupted lock steal once older than tmpMaxAgeMs", async () => {
    const root = await tempDir();
    await put(join(root, "records", ".snap-1.lock.stale-0a1b2c"), OLD, lockOf(process.pid));
    await put(join(root, "sessions", "k1.lock.want.stale-3d4e5f"), OLD, lockOf(process.pid));
    await put(join(root, "sessions", "k2.lock.stale-abcdef"), 1_000, lockOf(process.pid));
    expect(await sweepDebris(root, { tmpMaxAgeMs: 60_000 })).toEqual({ tmpFiles: 2, lockFiles: 0 });
    expect(await readdir(join(root, "records"))).toEqual([]);
    expect(await readdir(join(root, "sessions"))).toEqual(["k2.lock.stale-abcdef"]);
  });
});

describe("sweepDebris: lock files", () => {
  it("removes lock and lock-wait files whose holder process has exited, counting them", async () => {
    const root = await tempDir();
    const dead = await deadPid();
    await put(join(root, "records", ".snap-1.lock"), 0, lockOf(dead));
    await put(join(root, "sessions", "k1.lock.want"), 0, lockOf(dead));
    expect(await sweepDebris(root)).toEqual({ tmpFiles: 0, lockFiles: 2 });
    expect(await readdir(join(root, "records"))).toEqual([]);
    expect(await readdir(join(root, "sessions"))).toEqual([]);
  });

  it("keeps lock files of live processes, however old", async () => {
    const root = await tempDir();
    await put(join(root, "records", ".snap-1.lock"), OLD, lockOf(process.pid));
    await put(join(root, "sessions", "k1.lock.want"), OLD, lockOf(process.pid));
    expect(await sweepDebris(root, { tmpMaxAgeMs: 0 })).toEqual({ tmpFiles: 0, lockFiles: 0 });
    expect(await readdir(join(root, "records"))).toEqual([".snap-1.lock"]);
    expect(await readdir(join(root, "sessions"))).toEqual(["k1.lock.want"]);
  });
});

describe("sweepDebris: what it leaves alone", () => {
  it("leaves the marker, record, head and index files and unrelated files alone", async () => {
    const root = await tempDir();
    await put(join(root, "agentd-store.json"), OLD, '{"format":2}');
    await put(join(root, "records", "snap-1.json"), OLD);
    await put(join(root, "sessions", "k1.head.json"), OLD);
    await put(join(root, "sessions", "k1.idx"), OLD);
    await put(join(root, "notes.txt"), OLD);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 0 })).toEqual({ tmpFiles: 0, lockFiles: 0 });
    expect((await readdir(root, { recursive: true })).sort()).toEqual([
      "agentd-store.json",
      "notes.txt",
      "records",
      "records/snap-1.json",
      "sessions",
      "sessions/k1.head.json",
      "sessions/k1.idx",
    ]);
  });

  it("leaves a symbolic link alone even when it is named like debris", async () => {
    const root = await tempDir();
    const target = await put(join(root, "target"), OLD);
    await mkdir(join(root, "records"));
    await symlink(target, join(root, "records", ".snap-1.json.0a1b2c.tmp"));
    expect(await sweepDebris(root, { tmpMaxAgeMs: 0 })).toEqual({ tmpFiles: 0, lockFiles: 0 });
    expect(await readdir(join(root, "records"))).toEqual([".snap-1.json.0a1b2c.tmp"]);
  });

  it("sweeps nothing and does not fail when the directory does not exist", async () => {
    const root = await tempDir();
    expect(await sweepDebris(join(root, "missing"))).toEqual({ tmpFiles: 0, lockFiles: 0 });
  });
});

describe("sweepDebris: tenant prefix directories", () => {
  it("sweeps the records/ and sessions/ of tenant directories nested up to maxDepth below the root", async () => {
    const root = await tempDir();
    await put(join(root, "records", ".a.json.0a1b2c.tmp"), OLD);
    await put(join(root, "acme", "records", ".b.json.0a1b2c.tmp"), OLD);
    await put(join(root, "acme", "sessions", ".k.head.json.0a1b2c.tmp"), OLD);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 0, maxDepth: 1 })).toEqual({ tmpFiles: 3, lockFiles: 0 });
    expect(await readdir(join(root, "acme", "records"))).toEqual([]);
    expect(await readdir(join(root, "acme", "sessions"))).toEqual([]);
  });

  it("does not descend into tenant directories nested deeper than maxDepth", async () => {
    const root = await tempDir();
    await put(join(root, "acme", "eu", "records", ".b.json.0a1b2c.tmp"), OLD);
    await put(join(root, "acme", "eu", "sessions", ".k.head.json.0a1b2c.tmp"), OLD);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 0, maxDepth: 1 })).toEqual({ tmpFiles: 0, lockFiles: 0 });
    expect(await readdir(join(root, "acme", "eu", "records"))).toEqual([".b.json.0a1b2c.tmp"]);
  });

  it("sweeps tenant directories nested several levels deep by default", async () => {
    const root = await tempDir();
    await put(join(root, "tenants", "acme", "eu", "records", ".b.json.0a1b2c.tmp"), OLD);
    expect(await sweepDebris(root, { tmpMaxAgeMs: 0 })).toEqual({ tmpFiles: 1, lockFiles: 0 });
  });
});
