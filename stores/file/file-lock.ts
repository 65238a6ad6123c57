import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { link, open, rename, stat, unlink } from "node:fs/promises";
import { AgentError } from "../../src/errors/agent-error.js";
import { unlinkQuietly } from "./descriptor-io.js";
import { processAlive } from "./process-liveness.js";

/** Tuning for {@link acquireFileLock}. */
export interface FileLockOptions {
  /** A lock older than this is considered abandoned even if its holder still runs. Default 30 s. */
  staleMs?: number;
  /** Give up (ABORTED) after waiting this long. Default 60 s. */
  timeoutMs?: number;
}

/** What a lock file holds: its holder's pid and a token unique to the acquisition. */
export interface LockOwner {
  pid: number;
  token: string;
}

/** The lock file's owner, or undefined when it is missing or unreadable (read synchronously: a few dozen bytes). */
export function readOwner(path: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as LockOwner;
    return typeof parsed.pid === "number" && typeof parsed.token === "string" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock at `path` away from an abandoned holder: renames it aside
 * (atomic, so only one stealer wins), then checks that what was renamed is the
 * lock judged abandoned; if a fresh lock was caught instead, it is put back.
 */
async function stealIfAbandoned(path: string, staleMs: number): Promise<void> {
  let info;
  try {
    info = await stat(path);
  } catch {
    return;
  }
  const owner = readOwner(path);
  const abandoned =
    Date.now() - info.mtimeMs > staleMs ||
    (owner !== undefined && !processAlive(owner.pid)) ||
    // An unreadable lock older than a second was left by a writer that died mid-write.
    (owner === undefined && Date.now() - info.mtimeMs > UNREADABLE_MS);
  if (!abandoned) return;
  const aside = `${path}.stale-${randomBytes(6).toString("hex")}`;
  try {
    await rename(path, aside);
  } catch {
    return; // someone else stole or released it
  }
  const caught = readOwner(aside);
  if (caught && caught.token !== owner?.token) {
    await link(aside, path).catch(() => undefined); // a live lock: give it back
  }
  await unlink(aside).catch(() => undefined);
}

/**
 * Removes the lock (or lock-wait) file at `path` when its holder process is
 * gone, or when it stayed unreadable for over a second (a holder that died
 * mid-write); age alone never counts here. Race-free like a stealing
 * acquirer: renamed aside first, put back when a live lock was caught.
 * Resolves to true when a dead holder's file was removed.
 */
export async function removeIfAbandoned(path: string): Promise<boolean> {
  let info;
  try {
    info = await stat(path);
  } catch {
    return false;
  }
  const owner = readOwner(path);
  const abandoned = owner !== undefined ? !processAlive(owner.pid) : Date.now() - info.mtimeMs > UNREADABLE_MS;
  if (!abandoned) return false;
  const aside = `${path}.stale-${randomBytes(6).toString("hex")}`;
  try {
    await rename(path, aside);
  } catch {
    return false;
  }
  const caught = readOwner(aside);
  let removed = true;
  if (caught && caught.token !== owner?.token) {
    await link(aside, path).catch(() => undefined); // a live lock taken meanwhile: give it back
    removed = false;
  }
  await unlink(aside).catch(() => undefined);
  return removed;
}

/** The waiter announced at `wantPath` when it is a live process that announced itself within the last `staleMs`, else undefined. */
function liveWaiter(wantPath: string, staleMs: number): LockOwner | undefined {
  const info = statSync(wantPath, { throwIfNoEntry: false });
  if (!info || Date.now() - info.mtimeMs > staleMs) return undefined;
  const owner = readOwner(wantPath);
  return owner !== undefined && processAlive(owner.pid) ? owner : undefined;
}

/** True when another live lock user (not `token`) announced at `wantPath` that it waits for the lock. */
function wantedByOther(wantPath: string, token: string, staleMs: number): boolean {
  const waiter = liveWaiter(wantPath, staleMs);
  return waiter !== undefined && waiter.token !== token;
}

/**
 * True when a live process announced in `<lockPath>.want` that it waits for
 * the lock (within the last `staleMs`): a holder that keeps its lock between
 * uses hands it over then. One `stat` when nobody waits.
 */
export function isWanted(lockPath: string, staleMs = 30_000): boolean {
  return liveWaiter(`${lockPath}.want`, staleMs) !== undefined;
}

/** Announces at `wantPath` that this waiter wants the lock next; false when another waiter announced first (a dead one's claim is cleared). */
async function announce(wantPath: string, token: string, staleMs: number): Promise<boolean> {
  try {
    const handle = await open(wantPath, "wx", 0o600);
    try {
      await handle.writeFile(JSON.stringify({ pid: process.pid, token }));
    } finally {
      await handle.close();
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  await stealIfAbandoned(wantPath, staleMs).catch(() => undefined);
  return false;
}

/** A lock file still unreadable (no owner written) after this long was left by a holder that died mid-write. */
const UNREADABLE_MS = 1000;

/** How long an acquirer lets an announced waiter of another process go first. */
const YIELD_MS = 200;

/**
 * Cross-process exclusive lock on one host: creates `path` with O_EXCL
 * (`wx`), holding this process's pid and a random token. A lock whose holder
 * process is gone, or which is older than `staleMs`, is recovered. A waiter
 * that has to wait announces itself in `<path>.want`; other acquirers let it
 * go first (for up to 200 ms), so a process whose own writers keep re-taking
 * the lock cannot starve another process. Resolves to a release function
 * (idempotent; removes the lock only while it is still ours).
 */
export async function acquireFileLock(path: string, options: FileLockOptions = {}): Promise<() => Promise<void>> {
  const staleMs = options.staleMs ?? 30_000;
  const started = Date.now();
  const deadline = started + (options.timeoutMs ?? 60_000);
  const token = randomBytes(12).toString("hex");
  const wantPath = `${path}.want`;
  let announced = false;
  let delay = 1;
  try {
    for (;;) {
      const yielding = !announced && Date.now() - started < YIELD_MS && wantedByOther(wantPath, token, staleMs);
      if (!yielding) {
        try {
          const createdAt = Date.now(); // no later than the lock file's mtime
          // Synchronous: creating and filling a lock file costs less than one thread-pool round trip.
          const fd = openSync(path, "wx", 0o600);
          try {
            writeFileSync(fd, JSON.stringify({ pid: process.pid, token }));
          } finally {
            closeSync(fd);
          }
          let released = false;
          return async () => {
            if (released) return;
            released = true;
            // Held for less than half of both recovery thresholds (age > staleMs; unreadable for
            // over a second), so no acquirer can have judged it abandoned: still ours, no read-back.
            if (Date.now() - createdAt >= Math.min(staleMs, UNREADABLE_MS) / 2 && readOwner(path)?.token !== token)
              return;
            unlinkQuietly(path); // also when a sweep already removed it
          };
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        }
        await stealIfAbandoned(path, staleMs);
        if (!announced) announced = await announce(wantPath, token, staleMs);
      }
      if (Date.now() > deadline) {
        throw new AgentError(
          "ABORTED",
          `timed out waiting for lock ${path}; if no agentd process is using this store, delete the lock file`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, announced || yielding ? 1 : delay));
      delay = Math.min(delay * 2, 25);
    }
  } finally {
    if (announced && readOwner(wantPath)?.token === token) await unlink(wantPath).catch(() => undefined);
  }
}
