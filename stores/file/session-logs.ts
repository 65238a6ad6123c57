import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import type { KeyedMutex } from "../keyed-mutex.js";
import type { SessionHead } from "../snapshot-store.js";
import { syncDirectory } from "./directory-sync.js";
import { datasyncDescriptor, openIfExists } from "./descriptor-io.js";
import { unlinkIfExists } from "./session-files.js";
import { appendBatch, type LogWriter, type OpenLog } from "./log-append.js";
import type { CommitJournal } from "./commit-journal.js";
import { readOwner } from "./file-lock.js";
import type { BatchEntry, RemovalEntry } from "./journal-entry.js";
import { applyToLog, deadSegments, removeSegment } from "./journal-replay.js";
import { SessionLocks, type LockUse } from "./session-locks.js";
import { fileIdentity, readTailHead, SessionLogView } from "./session-log.js";
import { SnapshotMap } from "./snapshot-map.js";
import type { StoreLayout } from "./store-layout.js";

/** The in-process mutex key of the session whose log is at `path`. */
function mutexKeyOfLog(path: string): string {
  return `${path}\0s`;
}

/** The lock file of the session log at `path` (`<key>.log` → `<key>.lock`). */
function lockPathOfLog(path: string): string {
  return `${path.slice(0, -".log".length)}.lock`;
}

/** How {@link SessionLogs} writes. */
export interface SessionLogsOptions {
  /** The store directory (journal paths are relative to it). */
  root: string;
  /** Make each batch durable before a write resolves: through the commit journal (`journal`), else by an fdatasync of its log and the snapshot map. */
  fsync: boolean;
  /** The process's commit journal: batches wait for its group fsync instead of their log's (with `fsync`). */
  journal?: CommitJournal;
  /** See `SessionLocksOptions.staleMs`. */
  lockStaleMs?: number;
  /** See `SessionLocksOptions.idleMs`. */
  lockIdleMs?: number;
}

/** `fn` of a descriptor of the file at `path` opened for reading (closed after), or undefined when there is no such file. */
function readingFile<T>(path: string, fn: (fd: number) => T): T | undefined {
  const fd = openIfExists(path, "r");
  if (fd === undefined) return undefined;
  try {
    return fn(fd);
  } finally {
    closeSync(fd);
  }
}

/** How often a log this process holds open is checked to still be at its path (not removed or replaced from outside). */
const PATH_CHECK_MS = 200;

/** Most session log views a process keeps for reading (those of sessions it writes are kept as long as it holds their locks). */
const MAX_READ_VIEWS = 1024;

/**
 * The session logs of a file store, as one process sees them: a view per log
 * (read incrementally, `SessionLogView`), the open descriptor of each log this
 * process writes (kept while it keeps the session's lock, `SessionLocks`), and
 * the snapshot map of each store directory (`SnapshotMap`).
 */
export class SessionLogs {
  private readonly views = new Map<string, SessionLogView>();
  /** When each open log was last checked to still be at its path. */
  private readonly pathCheckedAt = new Map<string, number>();
  private readonly open = new Map<string, OpenLog>();
  private readonly maps = new Map<string, SnapshotMap>();
  private readonly locks: SessionLocks;
  private readonly journal: CommitJournal | undefined;
  /** Resolves once the segments of dead processes found at open are replayed; every read and write waits for it. */
  readonly ready: Promise<void>;
  private replaying: Promise<void> | undefined;

  constructor(
    private readonly mutex: KeyedMutex,
    private readonly options: SessionLogsOptions,
  ) {
    this.journal = options.fsync ? options.journal : undefined;
    this.locks = new SessionLocks({
      durable: this.journal !== undefined,
      ...(options.lockStaleMs !== undefined ? { staleMs: options.lockStaleMs } : {}),
      ...(options.lockIdleMs !== undefined ? { idleMs: options.lockIdleMs } : {}),
    });
    this.ready = this.journal ? this.replayDeadSegments() : Promise.resolve();
  }

  /**
   * Replays the journal segments of dead processes: for each session log a
   * segment wrote while its process held the session's lock (and still holds
   * it: the process died holding it), the batches it recorded but may not
   * have written, under the session's locks; then removes the segment. A log
   * whose lock the process had released is durable already (a lock is
   * released only after its log is fdatasynced). Runs at open and in the
   * debris sweep; never rejects (a segment that fails stays for the next run).
   */
  replayDeadSegments(): Promise<void> {
    // One replay at a time: the open-time replay and the debris sweep's would otherwise both take on the same segments.
    this.replaying ??= this.replayOnce().finally(() => (this.replaying = undefined));
    return this.replaying;
  }

  private async replayOnce(): Promise<void> {
    if (!this.journal) return;
    for (const segment of deadSegments(this.journal.dir)) {
      try {
        for (const [relative, entries] of segment.byLog) {
          const path = join(this.options.root, relative);
          if (readOwner(lockPathOfLog(path))?.pid !== segment.pid) continue;
          await this.mutex.run(mutexKeyOfLog(path), () => this.lockedLog(path, () => this.replay(path, entries), true));
        }
        removeSegment(segment);
      } catch {
        // left for the next run
      }
    }
  }

  /** Applies a dead process's entries to the log at `path` (its locks held) and makes its snapshot claims again. */
  private async replay(path: string, entries: readonly (BatchEntry | RemovalEntry)[]): Promise<void> {
    this.close(path);
    this.views.delete(path);
    const applied = await applyToLog(path, entries);
    const maps = new Set<SnapshotMap>();
    for (const entry of applied) {
      if (!entry.map) continue;
      const map = this.mapAt(join(this.options.root, entry.map.path));
      for (const id of entry.map.ids) map.claim(id, entry.map.key);
      maps.add(map);
    }
    await Promise.all([...maps].map((m) => m.sync()));
    await syncDirectory(dirname(path));
  }

  /** The snapshot map of the store directory of `layout`. */
  map(layout: StoreLayout): SnapshotMap {
    return this.mapAt(layout.snapshotMapPath);
  }

  private mapAt(path: string): SnapshotMap {
    let map = this.maps.get(path);
    if (!map) {
      map = new SnapshotMap(path);
      this.maps.set(path, map);
    }
    return map;
  }

  /**
   * The log at `path` read up to its last complete batch, or undefined when
   * there is no log. DATA_LOSS when it holds a garbled head.
   */
  view(path: string): SessionLogView | undefined {
    const held = this.open.get(path);
    if (held && held.view.ino !== -1 && this.heldCurrent(path)) return held.view; // no other process writes it
    let info;
    try {
      info = statSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    const view = this.viewOf(path);
    const identity = fileIdentity(info);
    if (identity === view.ino && info.size === view.validEnd) return view;
    if (held && view.ino === identity) {
      view.refresh(held.fd, identity, info.size);
      return view;
    }
    return readingFile(path, (fd) => {
      const now = fstatSync(fd);
      view.refresh(fd, fileIdentity(now), now.size);
      return view;
    });
  }

  /**
   * The head of the log at `path` without keeping a view (listing every
   * session): the log's last line when it is an intact head, else a full read.
   */
  readHead(path: string): SessionHead | undefined {
    const kept = this.views.get(path);
    if (kept) return this.view(path)?.head;
    return readingFile(path, (fd) => {
      const info = fstatSync(fd);
      const head = readTailHead(fd, info.size, path);
      if (head) return head;
      const view = new SessionLogView(path);
      view.refresh(fd, fileIdentity(info), info.size);
      return view.head;
    });
  }

  /** Reads `fn(fd)` from the log at `path` (the open descriptor of a log this process writes, else a new one). Undefined when there is no log. */
  withDescriptor<T>(path: string, fn: (fd: number) => T): T | undefined {
    const open = this.open.get(path);
    return open ? fn(open.fd) : readingFile(path, fn);
  }

  /**
   * Runs `fn` with the session's log open for appending, holding the
   * session's in-process mutex and cross-process lock (kept between calls
   * while the log exists).
   * When the lock was (re)taken, the log is checked first: a batch left
   * incomplete by a crash is cut off; DATA_LOSS when the log is garbled
   * before its end.
   */
  async write<T>(layout: StoreLayout, key: string, fn: (writer: LogWriter) => Promise<T>): Promise<T> {
    await this.ready;
    const path = layout.logPathOfKey(key);
    return this.locked(layout, key, async ({ fresh }) => {
      if (fresh || !this.heldCurrent(path)) this.close(path);
      const open = this.open.get(path) ?? this.openExisting(path);
      return fn(this.writer(layout, path, open));
    });
  }

  /**
   * Runs `fn` holding the session's mutex and lock without opening its log
   * (removal, also of a garbled log): the log's descriptor is closed first.
   */
  async exclusive<T>(layout: StoreLayout, key: string, fn: () => Promise<T>): Promise<T> {
    await this.ready;
    return this.locked(layout, key, () => {
      this.close(layout.logPathOfKey(key));
      return fn();
    });
  }

  /**
   * Removes the session's log (the caller holds its locks); with fsync its
   * directory entry is synced, after the removal is recorded in the journal
   * (so a replay of this process's earlier batches does not bring it back).
   * True when there was one.
   */
  async removeLog(layout: StoreLayout, key: string): Promise<boolean> {
    const path = layout.logPathOfKey(key);
    this.close(path);
    this.views.delete(path);
    if (this.journal && existsSync(path)) await this.journal.recordRemoval(relative(this.options.root, path));
    if (!(await unlinkIfExists(path))) return false;
    if (this.options.fsync) await syncDirectory(layout.sessionsDir);
    return true;
  }

  /**
   * Runs `fn` holding the session's in-process mutex and lock file; the lock
   * is kept only while this process has the log open, and released after an
   * fdatasync of the log. A lock taken from a process that died holding it
   * first replays what that process journaled for the log.
   */
  private locked<T>(layout: StoreLayout, key: string, fn: (use: LockUse) => Promise<T>): Promise<T> {
    const path = layout.logPathOfKey(key);
    return this.mutex.run(mutexKeyOfLog(path), () => this.lockedLog(path, fn, false));
  }

  /** {@link locked} by log path, the mutex held; `replaying`: the caller replays the log itself. */
  private async lockedLog<T>(path: string, fn: (use: LockUse) => Promise<T>, replaying: boolean): Promise<T> {
    const lockPath = lockPathOfLog(path);
    try {
      return await this.locks.use(
        lockPath,
        async (use) => {
          if (use.takenFromDead !== undefined && !replaying && this.journal) {
            for (const segment of deadSegments(this.journal.dir, use.takenFromDead)) {
              const entries = segment.byLog.get(relative(this.options.root, path));
              if (entries) await this.replay(path, entries);
            }
          }
          return fn(use);
        },
        () => this.release(path),
      );
    } finally {
      // No log open (none yet, or removed): nothing to keep the lock for.
      if (!this.open.has(path)) await this.locks.releaseNow(lockPath);
    }
  }

  /** Before the lock of the log at `path` goes: with a journal, its batches are made durable (the next holder relies on it), then the descriptor is closed. */
  private async release(path: string): Promise<void> {
    const open = this.open.get(path);
    if (!open) return;
    try {
      if (this.journal) await datasyncDescriptor(open.fd);
    } finally {
      if (this.open.get(path) === open) this.close(path);
    }
  }

  /** Releases every lock not in use (each log fdatasynced first), closes every descriptor and map, and retires the journal. */
  async closeAll(): Promise<void> {
    await this.ready;
    await this.locks.closeAll();
    await this.journal?.close();
    for (const path of [...this.open.keys()]) this.close(path);
    for (const map of this.maps.values()) map.close();
    this.maps.clear();
    this.views.clear();
  }

  private viewOf(path: string): SessionLogView {
    let view = this.views.get(path);
    if (view) {
      this.views.delete(path); // re-inserted: the map's order is least recently used first
    } else {
      view = new SessionLogView(path);
    }
    this.views.set(path, view);
    if (this.views.size > MAX_READ_VIEWS) {
      for (const [p] of this.views) {
        if (this.views.size <= MAX_READ_VIEWS) break;
        if (!this.open.has(p)) this.views.delete(p);
      }
    }
    return view;
  }

  /** Opens an existing log for appending and brings its view up to date, cutting off an incomplete last batch. */
  private openExisting(path: string): OpenLog | undefined {
    const fd = openIfExists(path, "r+");
    if (fd === undefined) return undefined;
    try {
      const view = this.viewOf(path);
      const info = fstatSync(fd);
      const size = info.size;
      view.refresh(fd, fileIdentity(info), size);
      if (!view.lastBatchIntact(fd)) {
        throw new AgentError(
          "DATA_LOSS",
          `session log ${path} has a garbled record in its last batch (at byte ${view.lastBatchStart}); restore it from a backup`,
        );
      }
      if (size > view.validEnd) ftruncateSync(fd, view.validEnd); // an incomplete batch: never acknowledged
      const open = { fd, view };
      this.open.set(path, open);
      return open;
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /**
   * True when the view of a log this process holds open (and whose lock it
   * keeps) is current without looking at the file: checked against the path
   * at most every {@link PATH_CHECK_MS}, for a log removed or replaced from
   * outside agentd.
   */
  private heldCurrent(path: string): boolean {
    const now = Date.now();
    const checked = this.pathCheckedAt.get(path) ?? 0;
    if (now - checked < PATH_CHECK_MS) return true;
    this.pathCheckedAt.set(path, now);
    return this.stillAtPath(path);
  }

  /** False when the log this process has open at `path` is no longer there (removed or replaced from outside). */
  private stillAtPath(path: string): boolean {
    const open = this.open.get(path);
    const info = statSync(path, { throwIfNoEntry: false });
    return open === undefined || (info !== undefined && fileIdentity(info) === open.view.ino);
  }

  private close(path: string): void {
    const open = this.open.get(path);
    if (!open) return;
    this.open.delete(path);
    this.pathCheckedAt.delete(path);
    closeSync(open.fd);
  }

  private writer(layout: StoreLayout, path: string, existing: OpenLog | undefined): LogWriter {
    let open = existing;
    const fsync = this.options.fsync;
    return {
      view: open?.view ?? this.viewOf(path),
      exists: open !== undefined,
      append: async (lines, head, claim) => {
        let created = false;
        if (!open) {
          const fd = openSync(path, "wx+", 0o600);
          open = { fd, view: this.viewOf(path) };
          open.view.refresh(fd, fileIdentity(fstatSync(fd)), 0);
          this.open.set(path, open);
          created = true;
        }
        await appendBatch(
          { root: this.options.root, fsync, journal: this.journal, sessionsDir: layout.sessionsDir },
          path,
          open,
          created,
          lines,
          head,
          claim,
        );
      },
    };
  }
}
