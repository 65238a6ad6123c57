import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdirSync } from "node:fs";
import { mkdir, open, rename, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { AgentError } from "../src/errors/agent-error.js";
import type { SessionSnapshot, SnapshotStatus } from "../src/types/snapshot.js";
import { acquireFileLock } from "./file/file-lock.js";
import { sanitizePathPrefix } from "./file/path-prefix.js";
import { SessionIndex } from "./file/session-index.js";
import { readSnapshotFile, readSnapshotHeader, serializeSnapshotFile } from "./file/snapshot-file.js";
import { DirectoryStatusWatcher } from "./file/status-watcher.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { assertValidSnapshotId, bindIdentity, isValidSnapshotId, newSnapshotId } from "./snapshot-identity.js";
import { encodePageToken, pageSizeOf, pageStartIndex } from "./snapshot-order.js";
import type {
  SessionStore,
  SnapshotMutator,
  SnapshotPage,
  SnapshotPageRequest,
  SnapshotSubscriber,
  StoreCallContext,
} from "./snapshot-store.js";
import { StatusChannel } from "./status-channel.js";

/** Options of {@link FileSessionStore}. */
export interface FileSessionStoreOptions {
  /**
   * Keep at most this many snapshots per conversation: after each save the new
   * row's `parentId` chain is walked and rows past the newest n are deleted.
   * Must be >= 1. Unset keeps everything.
   */
  maxChainLength?: number;
  /**
   * Per-call subdirectory (tenant isolation), e.g. `(ctx) => ctx.tenant ?? ""`.
   * May nest with `/`; `..`/`.` segments are rejected and other unsafe
   * characters percent-encoded, so a prefix never escapes the store directory.
   */
  pathPrefix?: (ctx: StoreCallContext) => string;
  /** Fallback poll interval for cross-process status changes (fs.watch is primary). Default 500 ms; <= 0 disables. */
  pollIntervalMs?: number;
  /** fsync each snapshot file before renaming it into place (survives power loss). Default true. */
  fsync?: boolean;
  /** A cross-process row lock older than this is considered abandoned. Default 30 s. */
  lockStaleMs?: number;
}

/**
 * A session store keeping one JSON file per snapshot at
 * `<dir>/<prefix?>/<snapshotId>.json`, for one host.
 *
 * Guarantees: each write is atomic (temp file, optional fsync, rename), so a
 * reader sees the old or the new row, never a torn one; `saveSnapshot` holds an
 * in-process per-ID mutex plus a cross-process lock file (`wx`, with recovery
 * of locks left by dead processes), so processes sharing the directory never
 * lose an update; status changes written by any process sharing the directory
 * reach subscribers (fs.watch, with a header-only poll as fallback).
 * Latest-by-session and listing read a per-session index file, not the whole
 * directory. Directories are created with mode 0700 and files with 0600.
 */
export class FileSessionStore<S = unknown> implements SessionStore<S>, SnapshotSubscriber {
  private readonly root: string;
  private readonly mutex = new KeyedMutex();
  private readonly watchers = new Map<string, DirectoryStatusWatcher>();
  private readonly ensured = new Set<string>();

  /** Creates `dir` (0700) if needed; throws FAILED_PRECONDITION when it cannot be created or written. */
  constructor(
    dir: string,
    private readonly options: FileSessionStoreOptions = {},
  ) {
    const max = options.maxChainLength;
    if (max !== undefined && (!Number.isInteger(max) || max < 1)) {
      throw new AgentError("INVALID_ARGUMENT", `maxChainLength must be an integer >= 1 (got ${max}); leave it unset to keep every snapshot`);
    }
    this.root = resolve(dir);
    try {
      mkdirSync(this.root, { recursive: true, mode: 0o700 });
      accessSync(this.root, constants.W_OK);
    } catch (err) {
      throw new AgentError("FAILED_PRECONDITION", `snapshot directory ${this.root} cannot be created or is not writable: ${(err as Error).message}`, {
        cause: err,
      });
    }
    this.ensured.add(this.root);
  }

  /** The absolute store directory. */
  get directory(): string {
    return this.root;
  }

  /** The directory holding this call's snapshots (root plus sanitised prefix). */
  baseDir(ctx: StoreCallContext = {}): string {
    if (!this.options.pathPrefix) return this.root;
    const segments = sanitizePathPrefix(this.options.pathPrefix(ctx));
    return segments.length ? join(this.root, ...segments) : this.root;
  }

  private async ensureDir(dir: string): Promise<void> {
    if (this.ensured.has(dir)) return;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    this.ensured.add(dir);
  }

  /** The row, or undefined (also for IDs that are not valid snapshot IDs). */
  async getSnapshot(snapshotId: string, ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined> {
    if (!isValidSnapshotId(snapshotId)) return undefined;
    return (await readSnapshotFile<S>(join(this.baseDir(ctx), `${snapshotId}.json`)))?.snapshot;
  }

  /** The session's newest row, found through its index file. */
  async getLatestSnapshot(sessionId: string, ctx?: StoreCallContext): Promise<SessionSnapshot<S> | undefined> {
    return (await this.listSnapshots(sessionId, { pageSize: 1 }, ctx)).snapshots[0];
  }

  /** The session's rows newest first; pages are cut from the index, rows whose file is gone are skipped. */
  async listSnapshots(sessionId: string, page?: SnapshotPageRequest, ctx?: StoreCallContext): Promise<SnapshotPage<S>> {
    const base = this.baseDir(ctx);
    const entries = await new SessionIndex(base).entries(sessionId);
    const size = pageSizeOf(page);
    const snapshots: SessionSnapshot<S>[] = [];
    let next = pageStartIndex(entries, page?.pageToken);
    while (snapshots.length < size && next < entries.length) {
      const batch = entries.slice(next, next + size - snapshots.length);
      next += batch.length;
      const rows = await Promise.all(batch.map((e) => readSnapshotFile<S>(join(base, `${e.snapshotId}.json`))));
      for (const row of rows) if (row && row.snapshot.sessionId === sessionId) snapshots.push(row.snapshot);
    }
    return next < entries.length ? { snapshots, nextPageToken: encodePageToken(entries[next - 1]!) } : { snapshots };
  }

  /** Atomic read→mutate→write under an in-process mutex and a cross-process lock file. */
  async saveSnapshot(snapshotId: string | undefined, mutator: SnapshotMutator<S>, ctx?: StoreCallContext): Promise<SessionSnapshot<S> | null> {
    const id = snapshotId ?? newSnapshotId();
    assertValidSnapshotId(id);
    const base = this.baseDir(ctx);
    await this.ensureDir(base);
    const saved = await this.withRowLock(base, id, () => this.saveLocked(base, id, mutator));
    if (!saved) return null;
    this.watchers.get(base)?.deliver(id, { status: saved.snapshot.status, version: saved.version });
    if (this.options.maxChainLength !== undefined) await this.pruneChain(base, saved.snapshot);
    return saved.snapshot;
  }

  /** Runs `fn` holding row `id`'s in-process mutex and its cross-process lock file. */
  private withRowLock<T>(base: string, id: string, fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(`${base}\0${id}`, async () => {
      const release = await acquireFileLock(join(base, `.${id}.lock`), { staleMs: this.options.lockStaleMs });
      try {
        return await fn();
      } finally {
        await release();
      }
    });
  }

  /** Read→mutate→write of one row; the caller holds its row lock. */
  private async saveLocked(
    base: string,
    id: string,
    mutator: SnapshotMutator<S>,
  ): Promise<{ snapshot: SessionSnapshot<S>; version: number } | null> {
    const path = join(base, `${id}.json`);
    const existing = await readSnapshotFile<S>(path);
    const result = await mutator(existing ? existing.snapshot : undefined);
    if (result === null) return null;
    const row = bindIdentity(result, id, existing?.snapshot);
    const version = (existing?.version ?? 0) + 1;
    const text = serializeSnapshotFile(version, row);
    const snapshot = JSON.parse(text).snapshot as SessionSnapshot<S>; // exactly what a reader will see
    if (!existing || existing.snapshot.createdAt !== row.createdAt) {
      await new SessionIndex(base).append(row.sessionId, id, row.createdAt);
    }
    await this.writeAtomically(base, id, path, text);
    return { snapshot, version };
  }

  private async writeAtomically(base: string, id: string, path: string, text: string): Promise<void> {
    const tmp = join(base, `.${id}.${randomBytes(6).toString("hex")}.tmp`);
    const handle = await open(tmp, "w", 0o600);
    try {
      await handle.writeFile(text, "utf8");
      if (this.options.fsync ?? true) await handle.sync();
    } catch (err) {
      await handle.close();
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await handle.close();
    await rename(tmp, path);
  }

  /** Deletes rows of `newest`'s parentId chain past the newest `maxChainLength`. */
  private async pruneChain(base: string, newest: SessionSnapshot<S>): Promise<void> {
    const max = this.options.maxChainLength!;
    let parentId = newest.parentId;
    let depth = 1;
    const seen = new Set([newest.snapshotId]);
    while (parentId && isValidSnapshotId(parentId) && !seen.has(parentId)) {
      seen.add(parentId);
      depth += 1;
      const path = join(base, `${parentId}.json`);
      const header = await readSnapshotHeader(path);
      if (!header) return; // already pruned: everything older is gone too
      if (depth > max) {
        await this.withRowLock(base, parentId, () =>
          unlink(path).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== "ENOENT") throw err;
          }),
        );
      }
      parentId = header.parentId;
    }
  }

  /** Current status (if the file exists), then every change by any process, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const base = this.baseDir(ctx);
    let watcher = this.watchers.get(base);
    if (!watcher) {
      const created: DirectoryStatusWatcher = new DirectoryStatusWatcher(base, { pollIntervalMs: this.options.pollIntervalMs }, () => {
        if (this.watchers.get(base) === created) this.watchers.delete(base);
      });
      watcher = created;
    }
    const owner = watcher;
    const channel: StatusChannel = new StatusChannel(signal, () => owner.remove(snapshotId, channel));
    // An invalid ID can never exist: the subscription just waits for the abort.
    if (channel.isClosed || !isValidSnapshotId(snapshotId)) return channel;
    this.watchers.set(base, owner);
    if (!this.ensured.has(base)) {
      mkdirSync(base, { recursive: true, mode: 0o700 }); // fs.watch needs the directory
      this.ensured.add(base);
    }
    owner.add(snapshotId, channel);
    return channel;
  }

  /** Number of directories currently watched (each with an OS watcher and/or poll timer). */
  get activeWatcherCount(): number {
    return [...this.watchers.values()].filter((w) => w.active).length;
  }

  /** Ends every subscription and closes every watcher. Idempotent. */
  async close(): Promise<void> {
    for (const watcher of [...this.watchers.values()]) watcher.closeAll();
    this.watchers.clear();
  }
}
