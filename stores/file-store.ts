import { constants, existsSync, mkdirSync } from "node:fs";
import { access, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { AgentError } from "../src/errors/agent-error.js";
import type { SnapshotStatus } from "../src/types/snapshot.js";
import { checkNow } from "./chunk-arguments.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "./chunk-log.js";
import { writeFileAtomically } from "./file/atomic-write.js";
import { FileChunkLogs } from "./file/chunk-logs.js";
import { sweepDebris, type DebrisSweepResult } from "./file/debris-sweep.js";
import { acquireFileLock } from "./file/file-lock.js";
import { readHeadFile, writeHeadFile } from "./file/head-file.js";
import { sanitizePathPrefix } from "./file/path-prefix.js";
import { readRecordFile, recordFileText, recordJson } from "./file/record-file.js";
import { appendIndexEntry, readIndexEntries } from "./file/session-index.js";
import { readAllHeads } from "./file/session-files.js";
import {
  removeSessionFiles,
  sessionMutexKey,
  sweepExpiredSessions,
  tenantLayouts,
  type RemovalContext,
} from "./file/session-removal.js";
import { DirectoryStatusWatcher } from "./file/status-watcher.js";
import { ensureStoreFormat, openStoreDirectory } from "./file/store-format.js";
import { sessionKey, StoreLayout } from "./file/store-layout.js";
import type { FileSessionStoreOptions } from "./file/store-options.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { checkLeasedHeadsLimit, earliestLeases } from "./leased-heads.js";
import { deepFreeze } from "./ledger/frozen-value.js";
import { walkChain } from "./ledger/state-chain.js";
import { headToStore, keepIdentity } from "./record-identity.js";
import { checkSessionQuery, pageOfHeads } from "./session-query.js";
import { isValidSnapshotId } from "./snapshot-identity.js";
import { encodePageToken, pageSizeOf, pageStartIndex } from "./snapshot-order.js";
import type {
  HeadCommit,
  HeadPage,
  RecordMutator,
  RecordPage,
  SessionHead,
  SessionQuery,
  SessionStore,
  SnapshotPageRequest,
  SnapshotRecord,
  SnapshotSubscriber,
  StoreCallContext,
} from "./snapshot-store.js";
import { StatusChannel } from "./status-channel.js";

export type { FileSessionStoreOptions };

/**
 * The session ledger (store format 2) in a directory, for any number of
 * processes on one host sharing it. Layout of `<dir>/<prefix?>/` (see
 * `StoreLayout`): `agentd-store.json` (format marker), `records/<snapshotId>.json`,
 * `sessions/<hash of session ID>.head.json` and `.idx` (the session's record index),
 * `chunks/<hash of session ID>/<snapshotId>.jsonl` (chunk logs, see `FileChunkLogs`).
 *
 * Guarantees: the constructor (for `dir`) and the first use of each prefix
 * directory fail with FAILED_PRECONDITION when they hold another store format
 * (a marker of another format, or format-1 snapshot files). Every file write
 * is atomic (temp file, fsync unless disabled, rename), so readers see the old
 * or the new file, never a torn one. `commit` holds the session's in-process
 * mutex and cross-process lock file (with recovery of locks left by dead
 * processes), so two commits with the same `expectedVersion` never both
 * succeed, in any processes; a commit that fails (version conflict, existing
 * record ID, I/O error) leaves no record visible. `updateRecord` holds the
 * record's mutex and lock file (no lost update across processes). Status
 * changes written by any process reach subscribers (fs.watch plus a poll, both
 * reading only a record's 1 KiB header). Directories are created with mode
 * 0700, files with 0600. Records and heads are handed out deep-frozen. A
 * corrupt record or head file reads as DATA_LOSS, never as missing.
 * Lifecycle: `listHeads`, `listLeasedHeads` and `sweepExpired` read every head file of the
 * directory (O(sessions)); `deleteSession` removes head, records, chunk logs,
 * index and lock under the session's lock. Nothing expires on its own: the
 * owner calls `sweepExpired` and `sweepChunks` (at open and on a timer).
 */
export class FileSessionStore<S = unknown> implements SessionStore<S>, SnapshotSubscriber, ChunkLog {
  private readonly root: string;
  private readonly mutex = new KeyedMutex();
  private readonly watchers = new Map<string, DirectoryStatusWatcher>();
  /** Directories whose format is checked, and those whose layout directories exist. */
  private readonly checked = new Set<string>();
  private readonly preparedBases = new Set<string>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly chunkLogs: FileChunkLogs;
  /** The sweep run when the store opened (tests, diagnostics); never rejects. */
  readonly debrisSwept: Promise<DebrisSweepResult>;

  /**
   * Creates `dir` (0700) if needed and checks its store format (writing the
   * marker on a new directory). Throws FAILED_PRECONDITION when the directory
   * cannot be created or written, or holds another store format.
   */
  constructor(
    dir: string,
    private readonly options: FileSessionStoreOptions = {},
  ) {
    this.root = resolve(dir);
    openStoreDirectory(this.root);
    this.checked.add(this.root);
    this.chunkLogs = new FileChunkLogs({
      layout: (ctx, write) => this.layout(ctx, write),
      sweepLayouts: (ctx) => this.sweepLayouts(ctx),
      mutex: this.mutex,
      fsync: this.fsync,
      pollIntervalMs: options.pollIntervalMs ?? 500,
    });
    this.debrisSwept = this.sweepDebris();
    const every = options.debrisSweep?.intervalMs ?? 60_000;
    if (every > 0) {
      this.sweepTimer = setInterval(() => void this.sweepDebris(), every);
      this.sweepTimer.unref();
    }
  }

  /** Removes crash debris (stale temporary files, lock files of dead processes) under the store directory. Never rejects. */
  sweepDebris(): Promise<DebrisSweepResult> {
    return sweepDebris(this.root, { tmpMaxAgeMs: this.options.debrisSweep?.tmpMaxAgeMs }).catch(() => ({
      tmpFiles: 0,
      lockFiles: 0,
    }));
  }

  /** Health probe: the store directory exists and is writable. */
  async ping(): Promise<void> {
    try {
      await access(this.root, constants.W_OK);
    } catch (err) {
      throw new AgentError("UNAVAILABLE", `store directory ${this.root} is not writable: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** The absolute store directory. */
  get directory(): string {
    return this.root;
  }

  /** The directory holding this call's data (root plus sanitised prefix). */
  baseDir(ctx: StoreCallContext = {}): string {
    if (!this.options.pathPrefix) return this.root;
    const segments = sanitizePathPrefix(this.options.pathPrefix(ctx));
    return segments.length ? join(this.root, ...segments) : this.root;
  }

  /** The layout of this call's directory after its format check; `write` also creates its directories. */
  private layout(ctx: StoreCallContext | undefined, write: boolean): StoreLayout {
    const layout = new StoreLayout(this.baseDir(ctx));
    const base = layout.base;
    if (!this.checked.has(base) && ensureStoreFormat(base, write)) this.checked.add(base);
    if (write && !this.preparedBases.has(base)) {
      mkdirSync(layout.recordsDir, { recursive: true, mode: 0o700 });
      mkdirSync(layout.sessionsDir, { recursive: true, mode: 0o700 });
      this.preparedBases.add(base);
    }
    return layout;
  }

  private get fsync(): boolean {
    return this.options.fsync ?? true;
  }

  /** Runs `fn` holding the in-process mutex `key` and the cross-process lock file `lockPath`. */
  private locked<T>(key: string, lockPath: string, fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(key, async () => {
      const release = await acquireFileLock(lockPath, { staleMs: this.options.lockStaleMs });
      try {
        return await fn();
      } finally {
        await release();
      }
    });
  }

  /** What session removal (delete, sweep) needs of the store. */
  private get removal(): RemovalContext {
    return {
      locked: (key, lockPath, fn) => this.locked(key, lockPath, fn),
      fsync: this.fsync,
      ...(this.options.lockStaleMs !== undefined ? { lockStaleMs: this.options.lockStaleMs } : {}),
    };
  }

  /** The session's head (deep-frozen), or undefined. DATA_LOSS when its file is corrupt. */
  async getHead(sessionId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    return readHeadFile(this.layout(ctx, false).headPath(sessionId), sessionId);
  }

  /**
   * Compare-and-set of the head under the session's locks: the record file is
   * created (never replacing one: ALREADY_EXISTS), its index line appended,
   * then the head replaced. On a version conflict nothing is written; when a
   * later step fails the record file is removed again.
   */
  async commit(commit: HeadCommit<S>, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const next = headToStore(commit);
    const layout = this.layout(ctx, true);
    const record = commit.record;
    const text = record ? recordFileText(1, record.status, recordJson(record)) : undefined; // serialized outside the lock
    const sessionId = next.sessionId;
    const stored = await this.locked(sessionMutexKey(layout, sessionId), layout.headLockPath(sessionId), async () => {
      const current = await readHeadFile(layout.headPath(sessionId), sessionId);
      if ((current?.version ?? 0) !== commit.expectedVersion) return undefined;
      if (!record || text === undefined) return writeHeadFile(layout.headPath(sessionId), next, this.fsync);
      const recordPath = layout.recordPath(record.snapshotId);
      if (!(await writeFileAtomically(recordPath, text, { fsync: this.fsync, exclusive: true }))) {
        throw new AgentError(
          "ALREADY_EXISTS",
          `snapshot ${record.snapshotId} already exists; a commit needs a new snapshot ID`,
        );
      }
      try {
        await appendIndexEntry(layout.indexPath(sessionId), record, this.fsync);
        return await writeHeadFile(layout.headPath(sessionId), next, this.fsync);
      } catch (err) {
        await unlink(recordPath).catch(() => undefined); // the commit failed: its record must not show
        throw err;
      }
    });
    if (stored && record)
      this.watchers.get(layout.base)?.deliver(record.snapshotId, { status: record.status, version: 1 });
    return stored;
  }

  /** The record (deep-frozen), or undefined (also for IDs that are not valid snapshot IDs). DATA_LOSS when its file is corrupt. */
  async getRecord(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined> {
    if (!isValidSnapshotId(snapshotId)) return undefined;
    const file = await readRecordFile<S>(this.layout(ctx, false).recordPath(snapshotId), snapshotId);
    return file && deepFreeze(file.record);
  }

  /** The chain from the nearest checkpoint, by parent links (one file read per record). */
  async getChain(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined> {
    return walkChain((id) => this.getRecord(id, ctx), snapshotId);
  }

  /**
   * The session's records newest first, cut from its index file; only the
   * page's record files are read (concurrently). Index entries whose file is
   * gone (a commit that failed after appending) are skipped.
   */
  async listRecords(sessionId: string, page?: SnapshotPageRequest, ctx?: StoreCallContext): Promise<RecordPage<S>> {
    const layout = this.layout(ctx, false);
    const entries = await readIndexEntries(layout.indexPath(sessionId));
    const size = pageSizeOf(page);
    const records: SnapshotRecord<S>[] = [];
    let next = pageStartIndex(entries, page?.pageToken);
    while (records.length < size && next < entries.length) {
      const batch = entries.slice(next, next + size - records.length);
      next += batch.length;
      const files = await Promise.all(
        batch.map((e) => readRecordFile<S>(layout.recordPath(e.snapshotId), e.snapshotId)),
      );
      for (const file of files) if (file && file.record.sessionId === sessionId) records.push(deepFreeze(file.record));
    }
    return next < entries.length ? { records, nextPageToken: encodePageToken(entries[next - 1]!) } : { records };
  }

  /**
   * Atomic read→mutate→write of one record under its in-process mutex and
   * cross-process lock file; the file's version is incremented (it orders
   * status observations) and local subscribers are told at once.
   */
  async updateRecord(
    snapshotId: string,
    mutator: RecordMutator<S>,
    ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null> {
    if (!isValidSnapshotId(snapshotId)) return null;
    const layout = this.layout(ctx, false);
    if (!this.preparedBases.has(layout.base) && !existsSync(layout.recordsDir)) return null; // no record was ever committed here
    const saved = await this.locked(`${layout.base}\0r\0${snapshotId}`, layout.recordLockPath(snapshotId), async () => {
      const path = layout.recordPath(snapshotId);
      const existing = await readRecordFile<S>(path, snapshotId);
      if (!existing) return null;
      const previous = deepFreeze(existing.record);
      const result = mutator(previous);
      if (result === null) return null;
      const record = deepFreeze(keepIdentity(result, previous));
      const version = existing.version + 1;
      await writeFileAtomically(path, recordFileText(version, record.status, recordJson(record)), {
        fsync: this.fsync,
      });
      return { record, version };
    });
    if (!saved) return null;
    this.watchers.get(layout.base)?.deliver(snapshotId, { status: saved.record.status, version: saved.version });
    return saved.record;
  }

  /**
   * The owner's sessions in this call's directory, newest updated first,
   * keyset-paginated (see `SessionStore.listHeads`). Cost: every page reads
   * the `sessions/` directory and every head file in it, O(sessions) file
   * reads (32 at a time) plus a sort; fine for thousands of sessions, not
   * for millions. DATA_LOSS when a head file is corrupt.
   */
  async listHeads(query: SessionQuery, ctx?: StoreCallContext): Promise<HeadPage> {
    const checked = checkSessionQuery(query);
    const layout = this.layout(ctx, false);
    return pageOfHeads(
      (await readAllHeads(layout)).map((h) => h.head),
      checked,
    );
  }

  /**
   * Removes the session from this call's directory under its in-process mutex
   * and cross-process lock file (so a concurrent commit waits, then finds no
   * head: it fails its version check or, with expectedVersion 0, creates a
   * fresh session): first the head file (readers see the session gone), then
   * each record file listed in its index (each under that record's lock, so
   * an `updateRecord` cannot write it back; a listed record of another
   * session is left alone), then the index; the lock file goes when it is
   * released. A delete interrupted by a crash leaves an index without a head;
   * `sweepExpired` finishes it. Cost: reads every record file of the session.
   */
  async deleteSession(sessionId: string, ctx?: StoreCallContext): Promise<boolean> {
    const layout = this.layout(ctx, false);
    const key = sessionKey(sessionId);
    if (![layout.headPathOfKey(key), layout.indexPathOfKey(key), layout.chunkDirOfKey(key)].some((p) => existsSync(p)))
      return false; // nothing to lock for
    return this.locked(sessionMutexKey(layout, sessionId), layout.headLockPath(sessionId), () =>
      removeSessionFiles(this.removal, layout, key, () => true),
    );
  }

  /**
   * Deletes (as `deleteSession`) every session whose expiresAt <= now, each
   * re-checked under its lock (a session written meanwhile stays); also
   * finishes deletes a crash interrupted (an index without a head, checked
   * under the session lock). With `ctx`: this call's directory only; without
   * (and with a `pathPrefix`): the store directory and every tenant prefix
   * directory below it. Resolves to how many expired sessions were deleted.
   * Cost: reads every head file, O(sessions). The store runs no sweeper of
   * its own: the owner calls this at open and periodically.
   */
  async sweepExpired(now: number, ctx?: StoreCallContext): Promise<number> {
    checkNow(now, "sweepExpired");
    let removed = 0;
    for (const layout of await this.sweepLayouts(ctx)) removed += await sweepExpiredSessions(this.removal, layout, now);
    return removed;
  }

  /**
   * The heads with a lease, earliest `lease.expiresAt` first (see `SessionStore.listLeasedHeads`), over
   * what `sweepExpired` covers (without `ctx`: every tenant directory); expired heads not yet swept are
   * included (as `getHead` returns them), corrupt head files skipped. Cost: reads every head file.
   */
  async listLeasedHeads(limit: number, ctx?: StoreCallContext): Promise<SessionHead[]> {
    checkLeasedHeadsLimit(limit);
    const heads: SessionHead[] = [];
    for (const layout of await this.sweepLayouts(ctx))
      for (const { head } of await readAllHeads(layout, { skipCorrupt: true })) heads.push(head);
    return earliestLeases(heads, limit);
  }

  /** What a sweep covers: this call's directory; without `ctx` (and with a `pathPrefix`) every store directory. */
  private async sweepLayouts(ctx: StoreCallContext | undefined): Promise<StoreLayout[]> {
    return ctx === undefined && this.options.pathPrefix ? tenantLayouts(this.root) : [this.layout(ctx, false)];
  }

  /** Appends and fsyncs the chunks' lines, keep-until first (see `ChunkLog.appendChunks`, `FileChunkLogs`). */
  appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<void> {
    return this.chunkLogs.appendChunks(key, chunks, keepUntil, ctx);
  }

  /** The log's complete lines after `afterSequence`, at most `limit` (see `ChunkLog.readChunks`). */
  readChunks(key: ChunkLogKey, afterSequence: number, limit: number, ctx?: StoreCallContext): Promise<StoredChunk[]> {
    return this.chunkLogs.readChunks(key, afterSequence, limit, ctx);
  }

  /** Whether the log file exists (see `ChunkLog.hasChunks`). */
  hasChunks(key: ChunkLogKey, ctx?: StoreCallContext): Promise<boolean> {
    return this.chunkLogs.hasChunks(key, ctx);
  }

  /** Sets the log's keep-until time, its keep file's mtime (see `ChunkLog.keepChunks`). */
  keepChunks(key: ChunkLogKey, keepUntil: number, ctx?: StoreCallContext): Promise<void> {
    return this.chunkLogs.keepChunks(key, keepUntil, ctx);
  }

  /** Wakes for appends by any process: fs.watch plus the poll (see `ChunkLog.watchChunks`, `ChunkFileWatcher`). */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<void> {
    return this.chunkLogs.watchChunks(key, signal, ctx);
  }

  /** Removes the logs whose keep-until time is ≤ `now`; no `ctx` covers every tenant (see `ChunkLog.sweepChunks`). */
  sweepChunks(now: number, ctx?: StoreCallContext): Promise<number> {
    return this.chunkLogs.sweepChunks(now, ctx);
  }

  /** Current status (if the record exists), then every change by any process, until `signal` aborts. */
  subscribeStatus(snapshotId: string, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<SnapshotStatus> {
    const base = this.baseDir(ctx);
    let watcher = this.watchers.get(base);
    if (!watcher) {
      const created: DirectoryStatusWatcher = new DirectoryStatusWatcher(
        new StoreLayout(base).recordsDir,
        { pollIntervalMs: this.options.pollIntervalMs },
        () => {
          if (this.watchers.get(base) === created) this.watchers.delete(base);
        },
      );
      watcher = created;
    }
    const owner = watcher;
    const channel: StatusChannel = new StatusChannel(signal, () => owner.remove(snapshotId, channel));
    // An invalid ID can never exist: the subscription just waits for the abort.
    if (channel.isClosed || !isValidSnapshotId(snapshotId)) return channel;
    try {
      this.layout(ctx, true); // fs.watch needs the records directory
    } catch (err) {
      channel.close();
      throw err;
    }
    this.watchers.set(base, owner);
    owner.add(snapshotId, channel);
    return channel;
  }

  /** Number of directories currently watched for status changes (each with an OS watcher and/or poll timer). */
  get activeWatcherCount(): number {
    return [...this.watchers.values()].filter((w) => w.active).length;
  }

  /** Number of open chunk log watchers (each with an OS watcher and/or poll timer). */
  get activeChunkWatcherCount(): number {
    return this.chunkLogs.activeWatcherCount;
  }

  /** Ends every subscription and chunk watcher and closes every watcher. Idempotent. */
  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.chunkLogs.closeAll();
    for (const watcher of [...this.watchers.values()]) watcher.closeAll();
    this.watchers.clear();
  }
}
