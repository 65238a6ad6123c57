import { statSync, utimesSync, watch, type FSWatcher } from "node:fs";
import { dirname, join } from "node:path";
import { syncDirectory } from "./directory-sync.js";
import { acquireFileLock, isWanted, readOwner } from "./file-lock.js";
import { processAlive } from "./process-liveness.js";

/** Tuning of {@link SessionLocks}. */
export interface SessionLocksOptions {
  /** A lock file older than this counts as abandoned (see `acquireFileLock`); held locks are touched well before. Default 30 s. */
  staleMs?: number;
  /** A lock unused for this long is released. Default 1 s. */
  idleMs?: number;
  /** fsync the lock's directory after creating and after removing a lock file (a commit journal relies on who holds a lock surviving power loss). */
  durable?: boolean;
}

/** Why a use runs with its lock: `fresh` when (re)taken for it, and the pid of a dead process it was taken from. */
export interface LockUse {
  fresh: boolean;
  takenFromDead?: number;
}

/** A lock this process holds. */
interface HeldLock {
  release: () => Promise<void>;
  /** The lock file's inode and change time: another file at the path (even on a reused inode) means the lock was taken away. */
  ino: number;
  ctimeMs: number;
  users: number;
  lastUsed: number;
  touchedAt: number;
  /** Runs (and is awaited) once before the lock file goes: the holder makes what it guards durable and drops its cached view. */
  onRelease: (() => void | Promise<void>) | undefined;
  /** Another process announced that it waits: hand the lock over once unused. */
  wanted: boolean;
  /** The release under way: every caller that lets this lock go awaits this one (onRelease runs once). */
  dropping?: Promise<void>;
}

/**
 * Cross-process lock files (`acquireFileLock`) kept between uses: a process
 * that commits to a session again and again takes its lock file once, not once
 * per commit. A kept lock is handed over when another process announces that
 * it waits (its `.want` file, seen at once through `fs.watch` on the lock's
 * directory, and looked for every tick; a lock in use is handed over when
 * that use ends), released after `idleMs` unused,
 * touched every `staleMs / 3` so that no acquirer judges it abandoned, and
 * checked at each use to still be this process's file (a lock taken away
 * from a holder that stalled past `staleMs` is not used again). Callers
 * serialise their uses of one path (the store's in-process mutex).
 */
export class SessionLocks {
  private readonly held = new Map<string, HeldLock>();
  /** Releases under way (closeAll waits for them: the holder's onRelease may still use what closeAll's caller closes next). */
  private readonly dropping = new Set<Promise<void>>();
  private closed = false;
  private readonly dirWatchers = new Map<string, FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private readonly staleMs: number;
  private readonly idleMs: number;
  private readonly durable: boolean;

  constructor(options: SessionLocksOptions = {}) {
    this.staleMs = options.staleMs ?? 30_000;
    this.idleMs = options.idleMs ?? 1000;
    this.durable = options.durable ?? false;
  }

  /**
   * Runs `fn` holding the lock file at `path`. `fresh` tells `fn` that the
   * lock was (re)taken for this call, so another process may have written
   * since this one last held it; `takenFromDead`, that it was recovered from
   * a process that died holding it. `onRelease` (kept from the call that took
   * the lock) runs, and is awaited, before the lock file goes.
   */
  async use<T>(path: string, fn: (use: LockUse) => Promise<T>, onRelease?: () => void | Promise<void>): Promise<T> {
    let held = this.held.get(path);
    if (held && (!this.stillOurs(path, held) || held.wanted)) {
      await this.drop(path, held);
      held = undefined;
    }
    const fresh = held === undefined;
    let takenFromDead: number | undefined;
    if (!held) {
      const before = readOwner(path);
      const release = await acquireFileLock(path, { staleMs: this.staleMs });
      if (before && !processAlive(before.pid)) takenFromDead = before.pid;
      if (this.durable) await syncDirectory(dirname(path));
      const now = Date.now();
      const info = statSync(path);
      held = {
        release,
        ino: info.ino,
        ctimeMs: info.ctimeMs,
        users: 0,
        lastUsed: now,
        touchedAt: now,
        onRelease,
        wanted: false,
      };
      this.held.set(path, held);
      this.startTimer();
      this.watchWants(dirname(path));
    }
    held.users++;
    try {
      return await fn(takenFromDead === undefined ? { fresh } : { fresh, takenFromDead });
    } finally {
      held.users--;
      held.lastUsed = Date.now();
      if ((held.wanted || this.closed) && held.users === 0) await this.drop(path, held).catch(() => undefined);
    }
  }

  /** Releases the lock at `path` now, if held and unused (after a session is deleted). */
  async releaseNow(path: string): Promise<void> {
    const held = this.held.get(path);
    if (held && held.users === 0) await this.drop(path, held);
  }

  /** Number of locks held (tests, diagnostics). */
  get heldCount(): number {
    return this.held.size;
  }

  /** Releases every lock not in use, waits for the releases already under way, and stops the timer. */
  async closeAll(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopWatching();
    for (const [path, held] of [...this.held]) if (held.users === 0) await this.drop(path, held);
    await Promise.allSettled([...this.dropping]);
  }

  /** One `stat`: the file at `path` is the one this process created (or last touched). */
  private stillOurs(path: string, held: HeldLock): boolean {
    try {
      const info = statSync(path);
      return info.ino === held.ino && info.ctimeMs === held.ctimeMs;
    } catch {
      return false;
    }
  }

  /**
   * Lets the lock go: once, however many callers (the tick, a waiter's
   * announcement, the end of a use, releaseNow, closeAll) ask for it; a later
   * caller awaits the release under way.
   */
  private drop(path: string, held: HeldLock): Promise<void> {
    if (!held.dropping) {
      const dropping = this.release(path, held).finally(() => this.dropping.delete(dropping));
      held.dropping = dropping;
      this.dropping.add(dropping);
    }
    return held.dropping;
  }

  private async release(path: string, held: HeldLock): Promise<void> {
    if (this.held.get(path) === held) this.held.delete(path);
    try {
      await held.onRelease?.();
    } finally {
      if (this.stillOurs(path, held)) {
        await held.release();
        if (this.durable) await syncDirectory(dirname(path));
      }
    }
    if (this.held.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.stopWatching();
    }
  }

  /** Watches `dir` for `.want` files announcing waiters of locks held here (best effort: the tick checks too). */
  private watchWants(dir: string): void {
    if (this.dirWatchers.has(dir)) return;
    try {
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (typeof name === "string" && name.endsWith(".lock.want"))
          this.onWanted(join(dir, name.slice(0, -".want".length)));
      });
      watcher.on("error", () => {
        watcher.close();
        if (this.dirWatchers.get(dir) === watcher) this.dirWatchers.delete(dir);
      });
      this.dirWatchers.set(dir, watcher);
    } catch {
      // e.g. the inotify limit: the tick still hands locks over
    }
  }

  private stopWatching(): void {
    for (const watcher of this.dirWatchers.values()) watcher.close();
    this.dirWatchers.clear();
  }

  /** A waiter may have announced itself for the lock at `path`: hand it over now, or once its current use ends. */
  private onWanted(path: string): void {
    const held = this.held.get(path);
    if (!held || !isWanted(path, this.staleMs)) return;
    if (held.users > 0) held.wanted = true;
    else void this.drop(path, held).catch(() => undefined);
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), Math.max(10, Math.min(this.idleMs, this.staleMs / 3) / 2));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    for (const [path, held] of [...this.held]) {
      if (!held.wanted && isWanted(path, this.staleMs)) held.wanted = true; // in case fs.watch missed it
      if (held.users === 0 && (now - held.lastUsed >= this.idleMs || held.wanted)) {
        await this.drop(path, held).catch(() => undefined);
      } else if (now - held.touchedAt >= this.staleMs / 3 && this.stillOurs(path, held)) {
        held.touchedAt = now;
        try {
          utimesSync(path, now / 1000, now / 1000);
          held.ctimeMs = statSync(path).ctimeMs;
        } catch {
          // gone: the next use finds it is no longer ours
        }
      }
    }
  }
}
