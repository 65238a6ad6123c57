import { access, readdir, readFile, writeFile, rm, utimes } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { acquireFileLock, removeIfAbandoned } from "../../stores/file/file-lock.js";
import { eventually } from "./snapshot-factory.js";
import { age, deadPid, useTempDirs, zombiePid } from "./file-fixtures.js";

// The cross-process lock of the file store (stores/file/file-lock.ts), tested on its own: which
// lock files count as abandoned and are taken over, and which are waited for.

const tempDir = useTempDirs("agentd-file-lock-");

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A fresh directory and the path of a lock file in it. */
async function lockPath(): Promise<string> {
  return join(await tempDir(), "s1.lock");
}

/** `text` as a regular expression matching exactly it. */
function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Whether `path` exists. */
async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * Sets the lock file's modification time (whole seconds in the past) and stops `Date.now()` `ageMs`
 * after it (timers keep running), then starts acquiring the lock with `staleMs` and waits until the acquirer has either
 * announced itself as a waiter (it judged the lock live) or changed the lock file (it took it over).
 * Resolves to the pending acquisition (wrapped, so that it is not awaited here).
 */
async function acquireAtAge(
  path: string,
  ageMs: number,
  staleMs: number,
): Promise<{ acquired: Promise<() => Promise<void>> }> {
  const before = await readFile(path, "utf8");
  const mtimeSeconds = Math.floor(Date.now() / 1000) - 100;
  await utimes(path, mtimeSeconds, mtimeSeconds);
  vi.spyOn(Date, "now").mockReturnValue(mtimeSeconds * 1000 + ageMs);
  const acquired = acquireFileLock(path, { staleMs });
  await eventually(
    async () => (await exists(`${path}.want`)) || (await readFile(path, "utf8").catch(() => "")) !== before,
  );
  return { acquired };
}

/** Calls a holder's `release` as if `ms` had passed since it took the lock (a holder that stalled). */
async function releaseAfter(release: () => Promise<void>, ms: number): Promise<void> {
  const now = Date.now();
  const clock = vi.spyOn(Date, "now").mockReturnValue(now + ms);
  try {
    await release();
  } finally {
    clock.mockRestore();
  }
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

  it("takes over a lock whose holder exited but was not reaped yet (a SIGKILLed server's zombie)", async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: await zombiePid(), token: "left-by-a-zombie" }));
    const release = await acquireFileLock(path, { ...TAKE_OVER, staleMs: 10 * 60_000 });
    expect(await ownerOf(path)).toMatchObject({ pid: process.pid });
    await release();
    expect(await readdir(join(path, ".."))).toEqual([]);
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
    await releaseAfter(releaseStalled, 60_000); // the stalled holder wakes up a minute later
    expect(await ownerOf(path)).toEqual(taken);
    await releaseNew();
    expect(await readdir(join(path, ".."))).toEqual([]);
  });

  it("lets a holder that stalled past a second, its lock taken over as unreadable, release nothing", async () => {
    const path = await lockPath();
    const releaseStalled = await acquireFileLock(path);
    await writeFile(path, ""); // as the lock looks when its holder stalls between creating and filling it
    await age(path, 5_000);
    const releaseNew = await acquireFileLock(path, { ...TAKE_OVER, staleMs: 10 * 60_000 });
    const taken = await ownerOf(path);
    await releaseAfter(releaseStalled, 1_500); // the stalled holder wakes up 1.5 s later (well under staleMs)
    expect(await ownerOf(path)).toEqual(taken);
    await releaseNew();
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

  it("waits for a lock of a live process older than a second but younger than staleMs", async () => {
    const path = await lockPath();
    const held = JSON.stringify({ pid: process.pid, token: "live-holder" });
    await writeFile(path, held);
    await age(path, 5_000);
    await expect(acquireFileLock(path, { staleMs: 10 * 60_000, timeoutMs: 300 })).rejects.toMatchObject({
      status: "ABORTED",
    });
    expect(await readFile(path, "utf8")).toBe(held);
  });

  it("waits for a lock of a live process exactly staleMs old: only an older one is stale", async () => {
    const path = await lockPath();
    const held = JSON.stringify({ pid: process.pid, token: "live-holder" });
    await writeFile(path, held);
    const { acquired } = await acquireAtAge(path, 30_000, 30_000);
    expect(await readFile(path, "utf8")).toBe(held);
    await rm(path); // the holder releases
    await (
      await acquired
    )();
  });

  it("waits for an unreadable lock file exactly one second old: only an older one was left by a dead writer", async () => {
    const path = await lockPath();
    await writeFile(path, `{"pid":${process.pid},"tok`);
    const { acquired } = await acquireAtAge(path, 1_000, 10 * 60_000);
    expect(await readFile(path, "utf8")).toBe(`{"pid":${process.pid},"tok`);
    await rm(path); // the writer finishes and releases
    await (
      await acquired
    )();
  });
});

describe("file lock: waiters announce themselves", () => {
  it("leaves another live waiter's announcement in place while it waits behind it", async () => {
    const path = await lockPath();
    const otherWaiter = JSON.stringify({ pid: process.pid, token: "other-waiter" });
    await writeFile(path, JSON.stringify({ pid: process.pid, token: "live-holder" }));
    await writeFile(`${path}.want`, otherWaiter);
    await expect(acquireFileLock(path, { staleMs: 10 * 60_000, timeoutMs: 300 })).rejects.toMatchObject({
      status: "ABORTED",
    });
    expect(await readFile(`${path}.want`, "utf8")).toBe(otherWaiter);
  });

  it("clears the announcement of a waiter whose process has exited and announces itself instead", async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: process.pid, token: "live-holder" }));
    await writeFile(`${path}.want`, JSON.stringify({ pid: await deadPid(), token: "dead-waiter" }));
    const acquired = acquireFileLock(path, { staleMs: 10 * 60_000, timeoutMs: 10_000 });
    await eventually(async () => {
      const announced = await ownerOf(`${path}.want`).catch(() => undefined);
      return announced?.pid === process.pid && announced.token !== "dead-waiter";
    }, 5_000);
    await rm(path); // the holder releases
    const release = await acquired;
    expect(await readdir(join(path, ".."))).toEqual(["s1.lock"]); // its announcement is gone once it holds the lock
    await release();
  });
});

describe("removeIfAbandoned (the debris sweep's lock check)", () => {
  it("removes a lock file whose holder process has exited, however fresh, leaving no set-aside copy", async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: await deadPid(), token: "left-by-a-dead-process" }));
    expect(await removeIfAbandoned(path)).toBe(true);
    expect(await readdir(join(path, ".."))).toEqual([]);
  });

  it("keeps the lock file of a live process, however old: age alone never counts", async () => {
    const path = await lockPath();
    const held = JSON.stringify({ pid: process.pid, token: "live-holder" });
    await writeFile(path, held);
    await age(path, 60 * 60_000);
    expect(await removeIfAbandoned(path)).toBe(false);
    expect(await readFile(path, "utf8")).toBe(held);
  });

  it("removes an unreadable lock file older than a second (its writer died mid-write)", async () => {
    const path = await lockPath();
    await writeFile(path, `{"pid":${process.pid},"tok`);
    await age(path, 5_000);
    expect(await removeIfAbandoned(path)).toBe(true);
    expect(await readdir(join(path, ".."))).toEqual([]);
  });

  it("keeps an unreadable lock file younger than a second (its writer may still be writing it)", async () => {
    const path = await lockPath();
    await writeFile(path, "");
    expect(await removeIfAbandoned(path)).toBe(false);
    expect(await readdir(join(path, ".."))).toEqual(["s1.lock"]);
  });

  it("keeps an unreadable lock file exactly one second old", async () => {
    const path = await lockPath();
    await writeFile(path, "");
    const mtimeSeconds = Math.floor(Date.now() / 1000) - 10;
    await utimes(path, mtimeSeconds, mtimeSeconds);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(mtimeSeconds * 1000 + 1000);
    expect(await removeIfAbandoned(path)).toBe(false);
    expect(await readdir(join(path, ".."))).toEqual(["s1.lock"]);
  });

  it("keeps a fresh lock file holding JSON that does not name a holder (pid and token)", async () => {
    const path = await lockPath();
    for (const text of ["{}", JSON.stringify({ token: "t" }), JSON.stringify({ pid: await deadPid() })]) {
      await writeFile(path, text);
      expect(await removeIfAbandoned(path)).toBe(false);
      expect(await readFile(path, "utf8")).toBe(text);
    }
  });

  it("resolves to false when there is no lock file", async () => {
    expect(await removeIfAbandoned(await lockPath())).toBe(false);
  });

  it("lets exactly one of several sweepers racing for one abandoned lock report its removal", async () => {
    const path = await lockPath();
    await writeFile(path, JSON.stringify({ pid: await deadPid(), token: "left-by-a-dead-process" }));
    await age(path, 5_000);
    const results = await Promise.all(Array.from({ length: 4 }, () => removeIfAbandoned(path)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await readdir(join(path, ".."))).toEqual([]);
  });
});
