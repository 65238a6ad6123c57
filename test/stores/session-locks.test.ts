import { existsSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SessionLocks, type SessionLocksOptions } from "../../stores/file/session-locks.js";
import { deadPid, osWatchesOn, useTempDirs } from "./file-fixtures.js";
import { eventually } from "./snapshot-factory.js";

// The lock files the file store keeps between uses (stores/file/session-locks.ts). A second
// SessionLocks on the same path plays another process: it waits through `acquireFileLock`, which
// announces it in `<path>.want` (a live pid is all the hand-over needs, so this process's own does).

const tempDir = useTempDirs("agentd-session-locks-");

const opened: SessionLocks[] = [];
afterEach(async () => {
  for (const locks of opened.splice(0)) await locks.closeAll();
});

/**
 * An idleMs past the test's timeout: a hand-over that waited for the holder's idle release
 * instead of acting on the waiter would time the test out, so no test needs to time it.
 */
const IDLE_PAST_THE_TEST_MS = 10 * 60_000;

/** A SessionLocks closed after the test. */
function sessionLocks(options: SessionLocksOptions = {}): SessionLocks {
  const locks = new SessionLocks(options);
  opened.push(locks);
  return locks;
}

/** The path of a lock file in a fresh directory. */
async function lockPath(name = "s1.lock"): Promise<string> {
  return join(await tempDir(), name);
}

/** A use of `path` that lasts until `end()`; `started` resolves with its `fresh` once it runs, `done` when it has ended. */
function openUse(
  locks: SessionLocks,
  path: string,
  onRelease?: () => void,
): { started: Promise<boolean>; isStarted: () => boolean; end: () => void; done: Promise<void> } {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  let start!: (fresh: boolean) => void;
  const started = new Promise<boolean>((resolve) => (start = resolve));
  let running = false;
  const done = locks.use(
    path,
    async ({ fresh }) => {
      running = true;
      start(fresh);
      await ended;
    },
    onRelease,
  );
  return { started, isStarted: () => running, end, done };
}

/** The token written in the lock file at `path`. */
function tokenOf(path: string): string {
  return (JSON.parse(readFileSync(path, "utf8")) as { token: string }).token;
}

/** What another process that took the lock over writes: its own lock file, renamed over `path` (so a new inode). */
function replaceLockFile(path: string, token: string): void {
  writeFileSync(`${path}.other`, JSON.stringify({ pid: process.pid, token }));
  renameSync(`${path}.other`, path);
}

describe("SessionLocks", () => {
  it("keeps the lock file between uses: the first use is fresh, the next one finds the same file and is not", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    const inodes: number[] = [];
    const fresh = [
      await locks.use(path, async ({ fresh }) => (inodes.push(statSync(path).ino), fresh)),
      await locks.use(path, async ({ fresh }) => (inodes.push(statSync(path).ino), fresh)),
    ];
    expect(fresh).toEqual([true, false]);
    expect(inodes[1]).toBe(inodes[0]);
    expect(statSync(path).ino).toBe(inodes[0]);
    expect(locks.heldCount).toBe(1);
  });

  it("releases a lock unused for idleMs: its file is removed and onRelease runs once", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 200 });
    const onRelease = vi.fn();
    await locks.use(path, async () => undefined, onRelease);
    expect(existsSync(path)).toBe(true);
    await eventually(() => !existsSync(path));
    expect(onRelease).toHaveBeenCalledTimes(1);
    expect(locks.heldCount).toBe(0);
  });

  it("takes the lock afresh at the first use after an idle release", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 200 });
    await locks.use(path, async () => undefined);
    await eventually(() => locks.heldCount === 0);
    expect(await locks.use(path, async ({ fresh }) => fresh)).toBe(true);
  });

  it("runs the onRelease of the use that took the lock, not of later uses", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    const first = vi.fn();
    const second = vi.fn();
    await locks.use(path, async () => undefined, first);
    await locks.use(path, async () => undefined, second);
    await locks.releaseNow(path);
    expect(first).toHaveBeenCalledTimes(1);
    expect(second).not.toHaveBeenCalled();
  });

  it("hands an unused lock over to another process that waits for it at once, long before idleMs", async () => {
    const path = await lockPath();
    const holder = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS });
    const onRelease = vi.fn();
    await holder.use(path, async () => undefined, onRelease);
    const waiter = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS });
    const fresh = await waiter.use(path, async ({ fresh: f }) => f);
    expect(fresh).toBe(true);
    expect(onRelease).toHaveBeenCalledTimes(1);
    expect(holder.heldCount).toBe(0);
    expect(waiter.heldCount).toBe(1);
  });

  it("hands a lock in use over once that use ends", async () => {
    const path = await lockPath();
    const holder = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS });
    const use = openUse(holder, path);
    await use.started;
    const inode = statSync(path).ino;
    const waiter = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS });
    let waiterFresh: boolean | undefined;
    const waited = waiter.use(path, async ({ fresh }) => {
      waiterFresh = fresh;
    });
    await eventually(() => existsSync(`${path}.want`));
    expect(waiterFresh).toBeUndefined();
    expect(statSync(path).ino).toBe(inode);

    use.end();
    await use.done;
    await waited;
    expect(waiterFresh).toBe(true);
    expect(holder.heldCount).toBe(0);
  });

  it("hands an unused lock over within a tick when the waiter was not seen before", async () => {
    // Named other than *.lock: the directory watcher does not notice this lock's waiters, the tick must
    // (every min(idleMs, staleMs / 3) / 2 = 1 s here). The waiter announces itself once, and its
    // announcement counts for staleMs (6 s): a tick late by seconds on a loaded machine still sees it.
    const path = await lockPath("s1.lk");
    const holder = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS, staleMs: 6000 });
    await holder.use(path, async () => undefined);
    const waiter = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS });
    expect(await waiter.use(path, async ({ fresh }) => fresh)).toBe(true);
    expect(holder.heldCount).toBe(0);
  });

  it("keeps its lock when the process that announced it waits is gone", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    await locks.use(path, async () => undefined);
    writeFileSync(`${path}.want`, JSON.stringify({ pid: await deadPid(), token: "dead waiter" }));
    expect(await locks.use(path, async ({ fresh }) => fresh)).toBe(false);
    expect(locks.heldCount).toBe(1);
  });

  it("does not remove a lock file that replaced its own when it lets the lock go", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    const onRelease = vi.fn();
    await locks.use(path, async () => undefined, onRelease);
    const inode = statSync(path).ino;
    replaceLockFile(path, "the other holder");
    expect(statSync(path).ino).not.toBe(inode);

    await locks.releaseNow(path);
    expect(onRelease).toHaveBeenCalledTimes(1);
    expect(locks.heldCount).toBe(0);
    expect(tokenOf(path)).toBe("the other holder");
  });

  it("does not use a lock whose file another holder removed and created again, even on the same inode", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    await locks.use(path, async () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later change time than the lock taken
    unlinkSync(path); // how acquireFileLock takes over an abandoned lock: the old file goes, a new one comes
    writeFileSync(path, JSON.stringify({ pid: process.pid, token: "the other holder" }));
    const use = openUse(locks, path);
    await eventually(() => existsSync(`${path}.want`)); // it waits for the other holder
    expect(use.isStarted()).toBe(false);
    expect(tokenOf(path)).toBe("the other holder");
    unlinkSync(path);
    expect(await use.started).toBe(true); // fresh
    use.end();
    await use.done;
  });

  it("after its lock file was replaced, waits at the next use for the other holder and then takes the lock afresh", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    const onRelease = vi.fn();
    await locks.use(path, async () => undefined, onRelease);
    const inode = statSync(path).ino;
    replaceLockFile(path, "the other holder");
    expect(statSync(path).ino).not.toBe(inode);

    const use = openUse(locks, path);
    await eventually(() => existsSync(`${path}.want`)); // waiting: the lock is the other's now
    expect(onRelease).toHaveBeenCalledTimes(1);
    expect(use.isStarted()).toBe(false);
    expect(tokenOf(path)).toBe("the other holder");

    unlinkSync(path); // the other holder releases it
    expect(await use.started).toBe(true);
    expect(tokenOf(path)).not.toBe("the other holder");
    use.end();
    await use.done;
    await locks.releaseNow(path);
    expect(existsSync(path)).toBe(false);
  });

  it("touches its unused lock file every staleMs / 3, so that no acquirer judges it abandoned", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ staleMs: 300, idleMs: 60_000 });
    await locks.use(path, async () => undefined);
    const { ino, mtimeMs } = statSync(path);
    await eventually(() => statSync(path).mtimeMs > mtimeMs);
    const touched = statSync(path).mtimeMs;
    await eventually(() => statSync(path).mtimeMs > touched);
    expect(statSync(path).ino).toBe(ino);
    expect(locks.heldCount).toBe(1);
  });

  it("touches its lock file every staleMs / 3 while a long use lasts", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ staleMs: 300, idleMs: 60_000 });
    const mtimes = await locks.use(path, async () => {
      const seen = [statSync(path).mtimeMs];
      for (let i = 0; i < 2; i++) {
        await eventually(() => statSync(path).mtimeMs > seen[i]!);
        seen.push(statSync(path).mtimeMs);
      }
      return seen;
    });
    expect(mtimes).toHaveLength(3);
  });

  it("releaseNow releases an unused lock at once", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    const onRelease = vi.fn();
    await locks.use(path, async () => undefined, onRelease);
    await locks.releaseNow(path);
    expect(existsSync(path)).toBe(false);
    expect(onRelease).toHaveBeenCalledTimes(1);
    expect(locks.heldCount).toBe(0);
  });

  it("releaseNow keeps a lock in use", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    const onRelease = vi.fn();
    const use = openUse(locks, path, onRelease);
    await use.started;
    await locks.releaseNow(path);
    expect(existsSync(path)).toBe(true);
    expect(onRelease).not.toHaveBeenCalled();
    expect(locks.heldCount).toBe(1);
    use.end();
    await use.done;
  });

  it("closeAll releases every unused lock", async () => {
    const dir = await tempDir();
    const paths = [join(dir, "s1.lock"), join(dir, "s2.lock")];
    const locks = sessionLocks({ idleMs: 10_000 });
    const onRelease = vi.fn();
    for (const path of paths) await locks.use(path, async () => undefined, onRelease);
    expect(locks.heldCount).toBe(2);
    await locks.closeAll();
    expect(paths.filter((path) => existsSync(path))).toEqual([]);
    expect(onRelease).toHaveBeenCalledTimes(2);
    expect(locks.heldCount).toBe(0);
  });

  it("runs onRelease once when a lock is let go from two sides at once (the tick and releaseNow)", async () => {
    // The tick lets a's lock go and waits in its onRelease (as the file store's fdatasync of a log
    // does under load); meanwhile releaseNow lets b's go. The tick, resumed, must not let b's go again:
    // a second onRelease would fdatasync a descriptor the first one closed (EBADF).
    // Named other than *.lock: only the tick (every 1 s here) notices their waiters.
    const dir = await tempDir();
    const [a, b] = [join(dir, "a.lk"), join(dir, "b.lk")];
    const locks = sessionLocks({ idleMs: IDLE_PAST_THE_TEST_MS, staleMs: 6000 });
    let aReleasing!: () => void;
    const aStarted = new Promise<void>((resolve) => (aReleasing = resolve));
    let letAGo!: () => void;
    const aGate = new Promise<void>((resolve) => (letAGo = resolve));
    const onReleaseB = vi.fn();
    await locks.use(
      a,
      async () => undefined,
      async () => (aReleasing(), await aGate),
    );
    await locks.use(b, async () => undefined, onReleaseB);
    for (const path of [a, b]) writeFileSync(`${path}.want`, JSON.stringify({ pid: process.pid, token: "waiter" }));

    await aStarted; // the tick has both locks in hand and waits in a's onRelease
    await locks.releaseNow(b);
    expect(onReleaseB).toHaveBeenCalledTimes(1);
    letAGo();
    await eventually(() => !existsSync(a)); // the tick goes on to b
    await new Promise((resolve) => setImmediate(resolve));
    expect(onReleaseB).toHaveBeenCalledTimes(1);
    expect(locks.heldCount).toBe(0);
  });

  it("closeAll waits for a release under way before it resolves", async () => {
    const path = await lockPath();
    const locks = sessionLocks({ idleMs: 10_000 });
    let releasing!: () => void;
    const started = new Promise<void>((resolve) => (releasing = resolve));
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    let released = false;
    await locks.use(
      path,
      async () => undefined,
      async () => {
        releasing();
        await gate;
        released = true;
      },
    );
    const released1 = locks.releaseNow(path);
    await started;
    const closed = locks.closeAll().then(() => released);
    await new Promise((resolve) => setImmediate(resolve)); // closeAll has had every chance to resolve early
    finish();
    expect(await closed).toBe(true);
    await released1;
    expect(existsSync(path)).toBe(false);
  });

  it("watches the directory of its locks only while it holds one there", async () => {
    const path = await lockPath();
    const dir = join(path, "..");
    const locks = sessionLocks({ idleMs: 10_000 });
    await locks.use(path, async () => undefined);
    expect(await osWatchesOn(dir)).toBe(1);
    await locks.releaseNow(path);
    expect(await osWatchesOn(dir)).toBe(0);
  });
});
