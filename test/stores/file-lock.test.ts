import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { acquireFileLock } from "../../stores/file/file-lock.js";

// The cross-process lock of the file store (stores/file/file-lock.ts), tested on its own: which
// lock files count as abandoned and are taken over, and which are waited for.

const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A fresh directory and the path of a lock file in it. */
async function lockPath(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "agentd-file-lock-"));
  dirs.push(dir);
  return join(dir, "s1.lock");
}

/** The pid of a process that has exited. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve(child.pid!));
  });
}

/** Sets the file's modification time `ms` into the past (how a lock ages without waiting for it). */
async function age(path: string, ms: number): Promise<void> {
  const then = new Date(Date.now() - ms);
  await utimes(path, then, then);
}

/** `text` as a regular expression matching exactly it. */
function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

async function ownerOf(path: string): Promise<{ pid: number; token: string }> {
  return JSON.parse(await readFile(path, "utf8")) as { pid: number; token: string };
}

// A lock that is not taken over makes acquireFileLock wait until its timeout and then fail with
// ABORTED; the short timeouts below turn "never recovered" into a prompt failure instead of a hang.
const TAKE_OVER = { timeoutMs: 2_000 };

describe("file lock: abandoned locks are taken over", () => {
  it("takes over a lock whose holder process has exited, however fresh the lock is", async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: await deadPid(), token: "left-by-a-dead-process" }));
    const release = await acquireFileLock(path, { ...TAKE_OVER, staleMs: 10 * 60_000 });
    expect(await ownerOf(path)).toMatchObject({ pid: process.pid });
    expect((await ownerOf(path)).token).not.toBe("left-by-a-dead-process");
    await release();
    expect(await readdir(join(path, ".."))).toEqual([]); // no lock, want or stale-aside file left
  });

  it("takes over a lock older than staleMs even though its holder process still runs (a stalled holder)", async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: process.pid, token: "stalled-holder" }));
    await age(path, 60_000);
    const release = await acquireFileLock(path, { ...TAKE_OVER, staleMs: 30_000 });
    expect((await ownerOf(path)).token).not.toBe("stalled-holder");
    await release();
    expect(await readdir(join(path, ".."))).toEqual([]);
  });

  it("takes over an unreadable lock file older than a second (its writer died mid-write)", async () => {
    const path = await lockPath();
    await writeFile(path, `{"pid":${process.pid},"tok`);
    await age(path, 5_000);
    const release = await acquireFileLock(path, { ...TAKE_OVER, staleMs: 10 * 60_000 });
    expect(await ownerOf(path)).toMatchObject({ pid: process.pid });
    await release();
  });

  it("lets the holder whose lock was taken over release nothing: the new holder keeps its lock", async () => {
    const path = await lockPath();
    const releaseStalled = await acquireFileLock(path);
    await age(path, 60_000);
    const releaseNew = await acquireFileLock(path, { ...TAKE_OVER, staleMs: 30_000 });
    const taken = await ownerOf(path);
    await releaseStalled(); // the stalled holder wakes up and releases "its" lock
    expect(await ownerOf(path)).toEqual(taken);
    await releaseNew();
    expect(await readdir(join(path, ".."))).toEqual([]);
  });
});

describe("file lock: live locks are waited for", () => {
  it("waits for a fresh lock of a live process instead of taking it over, then fails ABORTED naming it", async () => {
    const path = await lockPath();
    const held = JSON.stringify({ pid: process.pid, token: "live-holder" });
    await writeFile(path, held);
    // Bounded negative check: the lock's own timeout ends the wait (300 ms); taking the lock over
    // would resolve instead.
    await expect(acquireFileLock(path, { staleMs: 10 * 60_000, timeoutMs: 300 })).rejects.toMatchObject({
      status: "ABORTED",
      message: expect.stringMatching(new RegExp(`timed out waiting for lock ${escaped(path)}.*delete the lock file`)),
    });
    expect(await readFile(path, "utf8")).toBe(held);
    expect(await readdir(join(path, ".."))).toEqual(["s1.lock"]); // its wait announcement (.want) is gone
  });
});
