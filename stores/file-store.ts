import { FileWebhookOutbox } from "./file/webhook-outbox.js";
import type { WebhookOutbox } from "./webhook-outbox.js";
import { constants, existsSync, mkdirSync } from "node:fs";
import { access } from "node:fs/promises";
import { join, resolve } from "node:path";
import { AgentError } from "../src/errors/agent-error.js";
import type { SnapshotStatus } from "../src/types/snapshot.js";
import { checkNow } from "./chunk-arguments.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "./chunk-log.js";
import { FileChunkLogs } from "./file/chunk-logs.js";
import { sweepDebris, type DebrisSweepResult } from "./file/debris-sweep.js";
import { encodeHeadLine, encodeRecordLine, type EncodedLogLine } from "./file/log-line.js";
import { sanitizePathPrefix } from "./file/path-prefix.js";
import { checkHeadKey, readAllHeads } from "./file/session-files.js";
import { CommitJournal } from "./file/commit-journal.js";
import type { LogWriter } from "./file/log-append.js";
import { SessionLogs } from "./file/session-logs.js";
import { removeSession, sweepExpiredSessions, tenantLayouts } from "./file/session-removal.js";
import { pageOfLoggedRecords, readLoggedRecord } from "./file/logged-record.js";
import { LogStatusSubscriptions } from "./file/log-status-subscriptions.js";
import { ensureStoreFormat, openStoreDirectory } from "./file/store-format.js";
import { JOURNAL_DIR, sessionKey, StoreLayout } from "./file/store-layout.js";
import type { FileSessionStoreOptions } from "./file/store-options.js";
import { KeyedMutex } from "./keyed-mutex.js";
import { checkLeasedHeadsLimit, earliestLeases } from "./leased-heads.js";
import { headsAfter } from "./head-scan.js";
import { deepFreeze } from "./ledger/frozen-value.js";
import { walkChain } from "./ledger/state-chain.js";
import { headToStore, keepIdentity } from "./record-identity.js";
import { checkSessionQuery, pageOfHeads } from "./session-query.js";
import { isValidSnapshotId } from "./snapshot-identity.js";

/** A session key no log has (keys are hex): what an unknown snapshot ID looks up instead of its session's head. */
const NO_SESSION_KEY = "0".repeat(39) + "g";
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
  ExpireHook,
} from "./snapshot-store.js";

export type { FileSessionStoreOptions };

/**
 * The session ledger (file store format 3) in a directory, for any number of
 * processes on one host sharing it. Layout of `<dir>/<prefix?>/` (see
 * `StoreLayout`): `agentd-store.json` (format marker), `sessions/<hash of
 * session ID>.log` (the session log: every commit and record update appends
 * its record lines and the session's head, `SessionLogView`),
 * `snapshots.map` (snapshot ID → session, `SnapshotMap`),
 * `chunks/<hash of session ID>/<snapshotId>.jsonl` (chunk logs, see `FileChunkLogs`).
 *
 * Guarantees: the constructor (for `dir`) and the first use of each prefix
 * directory fail with FAILED_PRECONDITION when they hold another store format
 * (format 2 included: its data is not converted). A commit or record update is
 * one positioned write of a batch whose last line is the head, followed (with
 * fsync, the default) by an fdatasync of the log, so it resolves once durable,
 * and readers in any process see a batch whole or not at all (lines carry a
 * CRC; a batch counts once its head line is intact). `commit` and
 * `updateRecord` hold the session's in-process mutex and cross-process lock
 * file (kept between commits, handed over when another process waits,
 * recovered from dead processes), so two commits with the same
 * `expectedVersion` never both succeed, in any processes; a commit that
 * fails (version conflict, existing record ID, I/O error) leaves no record
 * visible once it has failed. Status changes written by any process reach
 * subscribers (fs.watch plus a poll, reading line headers only). Directories
 * are created with mode 0700, files with 0600. Records and heads are handed
 * out deep-frozen. A garbled head or record reads as DATA_LOSS, never as
 * missing. Lifecycle: `listHeads`, `listLeasedHeads` and `sweepExpired` read
 * the end of every session log of the directory (O(sessions));
 * `deleteSession` removes the log and chunk logs under the session's lock.
 * Nothing expires on its own: the owner calls `sweepExpired` and
 * `sweepChunks` (at open and on a timer).
 *
 * @deprecated The file store is retired as a serving store (`agentd serve
 * --store file:` is refused); it is kept only as the reader of `agentd
 * copy-store file:<dir> sqlite:<dir>/agentd.db`, which moves its sessions into
 * SQLite. Use `SqlSessionStore` (or `openStoreFromUri("sqlite:…")`) instead.
 */
export class FileSessionStore<S = unknown> implements SessionStore<S>, SnapshotSubscriber, ChunkLog {
  private readonly root: string;
  private readonly mutex = new KeyedMutex();
  private readonly logs: SessionLogs;
  private readonly statuses: LogStatusSubscriptions;
  /** Directories whose format is checked, and those whose layout directories exist. */
  private readonly checked = new Set<string>();
  private readonly preparedBases = new Set<string>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly chunkLogs: FileChunkLogs;
  private webhooks: FileWebhookOutbox | undefined;
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
    this.logs = new SessionLogs(this.mutex, {
      root: this.root,
      fsync: this.fsync,
      ...(this.fsync && options.journal !== false ? { journal: new CommitJournal(join(this.root, JOURNAL_DIR)) } : {}),
      ...(options.lockStaleMs !== undefined ? { lockStaleMs: options.lockStaleMs } : {}),
    });
    this.statuses = new LogStatusSubscriptions(this.logs, options.pollIntervalMs);
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

  /**
   * Replays the commit journal segments of processes that died, then removes
   * crash debris (stale temporary files, lock files of dead processes) under
   * the store directory. Never rejects.
   */
  async sweepDebris(): Promise<DebrisSweepResult> {
    await this.logs.replayDeadSegments();
    return sweepDebris(this.root, { tmpMaxAgeMs: this.options.debrisSweep?.tmpMaxAgeMs }).catch(() => ({
      tmpFiles: 0,
      lockFiles: 0,
    }));
  }

  /** Health probe: the store directory exists and is writable. */
  /** The webhook outbox in `<dir>/webhooks/`, shared by every process using the directory (see `FileWebhookOutbox`). */
  webhookOutbox(): WebhookOutbox {
    return (this.webhooks ??= new FileWebhookOutbox(this.root));
  }

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
      mkdirSync(layout.sessionsDir, { recursive: true, mode: 0o700 });
      this.preparedBases.add(base);
    }
    return layout;
  }

  private get fsync(): boolean {
    return this.options.fsync ?? true;
  }

  /** The session's head (deep-frozen), or undefined. DATA_LOSS when its log holds a garbled head or another session's. */
  async getHead(sessionId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    await this.logs.ready;
    const layout = this.layout(ctx, false);
    const key = sessionKey(sessionId);
    const head = this.logs.view(layout.logPathOfKey(key))?.head;
    return head && checkHeadKey(head, key, layout.logPathOfKey(key));
  }

  /**
   * Compare-and-set of the head under the session's locks: the record's ID is
   * claimed in the snapshot map (ALREADY_EXISTS when the session already holds
   * it or another session claimed it first), then the record and head lines
   * are appended to the session log. On a version conflict nothing is written.
   * A batch whose write fails but which the log holds afterwards (its sync
   * failed and cutting it off failed too) is a commit that landed: it
   * resolves to the head, never to an error (see appendOrFindLanded).
   */
  async commit(commit: HeadCommit<S>, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    const next = headToStore(commit);
    const layout = this.layout(ctx, true);
    const key = sessionKey(next.sessionId);
    const record = commit.record;
    // Serialized outside the lock.
    const recordLine = record && encodeRecordLine(record, 1);
    const headText = JSON.stringify(next);
    const headLine = encodeHeadLine(next.version, headText);
    const logPath = layout.logPathOfKey(key);
    const stored = await this.logs.write(layout, key, async (writer) => {
      const current = writer.view.head && checkHeadKey(writer.view.head, key, layout.logPathOfKey(key));
      if ((current?.version ?? 0) !== commit.expectedVersion) return undefined;
      const head = deepFreeze(JSON.parse(headText) as SessionHead);
      if (!record || !recordLine) {
        await this.appendOrFindLanded(writer, logPath, headText, () => writer.append([headLine], head));
        return head;
      }
      const map = this.logs.map(layout);
      if (writer.view.records.has(record.snapshotId) || map.claim(record.snapshotId, key) !== key) {
        throw new AgentError(
          "ALREADY_EXISTS",
          `snapshot ${record.snapshotId} already exists; a commit needs a new snapshot ID`,
        );
      }
      await this.appendOrFindLanded(writer, logPath, headText, () =>
        writer.append([recordLine, headLine], head, { map, key, ids: [record.snapshotId] }),
      );
      return head;
    });
    if (stored && record) this.statuses.deliver(layout, record.snapshotId, { status: record.status, version: 1 });
    return stored;
  }

  /**
   * The head of the session whose log holds `snapshotId`, without reading the
   * record; undefined when none does. A known and an unknown ID do the same
   * work: one snapshot-map lookup that reads what other processes appended,
   * then one session-log head lookup (for an unknown ID, of the session the
   * last known ID was in, or of a key no session has).
   */
  async headOfRecord(snapshotId: string, ctx?: StoreCallContext): Promise<SessionHead | undefined> {
    await this.logs.ready;
    const layout = this.layout(ctx, false);
    const key = isValidSnapshotId(snapshotId) ? this.logs.map(layout).lookupFresh(snapshotId) : undefined;
    // An unknown ID views the log of the last session found here (a real log, so the same file checks).
    const decoy = this.decoyKeys.get(layout.sessionsDir) ?? NO_SESSION_KEY;
    const path = layout.logPathOfKey(key ?? decoy);
    const head = this.logs.view(path)?.head;
    // The head's key check (a SHA-256 of its session ID) runs either way too.
    const intact = head !== undefined && sessionKey(head.sessionId) === (key ?? decoy);
    if (key === undefined || !head) return undefined;
    if (!intact) return checkHeadKey(head, key, path); // DATA_LOSS
    this.decoyKeys.set(layout.sessionsDir, key);
    return head;
  }

  /** Per store (or tenant prefix) directory, the session key the last {@link headOfRecord} found. */
  private readonly decoyKeys = new Map<string, string>();

  /**
   * Runs `append` (a commit's batch); when it fails, reads the log again
   * (still under the session's locks) and treats the commit as written when
   * the log's head is the one it wrote: a failed sync or a failed cut-back
   * may leave the batch in the log, where every reader sees it, and a
   * commit readers see must not be reported as failed. Otherwise rethrows.
   */
  private async appendOrFindLanded(
    writer: LogWriter,
    logPath: string,
    headText: string,
    append: () => Promise<void>,
  ): Promise<void> {
    try {
      await append();
    } catch (err) {
      const now = writer.exists || existsSync(logPath) ? this.logs.view(logPath)?.head : undefined;
      if (now && JSON.stringify(now) === headText) return;
      throw err;
    }
  }

  /** The record (deep-frozen), or undefined (also for IDs that are not valid snapshot IDs). DATA_LOSS when its line is garbled. */
  async getRecord(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S> | undefined> {
    await this.logs.ready;
    if (!isValidSnapshotId(snapshotId)) return undefined;
    const layout = this.layout(ctx, false);
    const key = this.logs.map(layout).lookup(snapshotId);
    return key === undefined ? undefined : this.readRecord(layout, key, snapshotId);
  }

  /** The record `snapshotId` as the log of the session whose key is `key` holds it, or undefined. */
  private readRecord(layout: StoreLayout, key: string, snapshotId: string): SnapshotRecord<S> | undefined {
    return readLoggedRecord<S>(this.logs, layout.logPathOfKey(key), snapshotId);
  }

  /** The chain from the nearest checkpoint, by parent links. */
  async getChain(snapshotId: string, ctx?: StoreCallContext): Promise<SnapshotRecord<S>[] | undefined> {
    return walkChain((id) => this.getRecord(id, ctx), snapshotId);
  }

  /** The session's records newest first, from its log; only the page's records are read. */
  async listRecords(sessionId: string, page?: SnapshotPageRequest, ctx?: StoreCallContext): Promise<RecordPage<S>> {
    await this.logs.ready;
    const layout = this.layout(ctx, false);
    return pageOfLoggedRecords<S>(this.logs, layout.logPathOfKey(sessionKey(sessionId)), sessionId, page);
  }

  /**
   * Atomic read→mutate→write of one record under its session's locks: the
   * new version is appended to the session log with the session's head
   * unchanged; the record's version is incremented (it orders status
   * observations) and local subscribers are told at once.
   */
  async updateRecord(
    snapshotId: string,
    mutator: RecordMutator<S>,
    ctx?: StoreCallContext,
  ): Promise<SnapshotRecord<S> | null> {
    if (!isValidSnapshotId(snapshotId)) return null;
    const layout = this.layout(ctx, false);
    if (!this.preparedBases.has(layout.base) && !existsSync(layout.sessionsDir)) return null; // nothing was ever committed here
    const key = this.logs.map(layout).lookup(snapshotId);
    if (key === undefined) return null;
    const saved = await this.logs.write(layout, key, async (writer) => {
      const logged = writer.view.records.get(snapshotId);
      const head = writer.view.head;
      if (!writer.exists || !logged || !head) return null;
      const existing = this.readRecord(layout, key, snapshotId);
      if (!existing) return null;
      const result = mutator(existing);
      if (result === null) return null;
      const record = deepFreeze(keepIdentity(result, existing));
      const version = logged.version + 1;
      const lines: EncodedLogLine[] = [
        encodeRecordLine(record, version),
        encodeHeadLine(head.version, JSON.stringify(head)),
      ];
      await writer.append(lines, head);
      return { record, version };
    });
    if (!saved) return null;
    this.statuses.deliver(layout, snapshotId, { status: saved.record.status, version: saved.version });
    return saved.record;
  }

  /**
   * The owner's sessions in this call's directory, newest updated first,
   * keyset-paginated (see `SessionStore.listHeads`). Cost: every page reads
   * the `sessions/` directory and the end of every session log in it,
   * O(sessions), plus a sort; fine for thousands of sessions, not for
   * millions. DATA_LOSS when a head is garbled.
   */
  async listHeads(query: SessionQuery, ctx?: StoreCallContext): Promise<HeadPage> {
    await this.logs.ready;
    const checked = checkSessionQuery(query);
    const layout = this.layout(ctx, false);
    return pageOfHeads(
      (await readAllHeads(layout, this.logs)).map((h) => h.head),
      checked,
    );
  }

  /**
   * Removes the session from this call's directory under its locks (so a
   * concurrent commit waits, then finds no head: it fails its version check
   * or, with expectedVersion 0, creates a fresh session): its log, then its
   * chunk logs. Its records are gone with the log (the snapshot map's lines
   * for them name a log that no longer holds them).
   */
  async deleteSession(sessionId: string, ctx?: StoreCallContext): Promise<boolean> {
    const layout = this.layout(ctx, false);
    const key = sessionKey(sessionId);
    if (![layout.logPathOfKey(key), layout.chunkDirOfKey(key)].some((p) => existsSync(p))) return false; // nothing to lock for
    return removeSession(this.logs, layout, key, () => true);
  }

  /**
   * Deletes (as `deleteSession`) every session whose expiresAt <= now, each
   * re-checked under its lock (a session written meanwhile stays). With
   * `ctx`: this call's directory only; without (and with a `pathPrefix`):
   * the store directory and every tenant prefix directory below it. Resolves
   * to how many expired sessions were deleted. `beforeExpire` sees each
   * expired head before its deletion (see `SessionStore.sweepExpired`). Cost: reads the end of every
   * session log, O(sessions). The store runs no sweeper of its own: the owner
   * calls this at open and periodically.
   */
  async sweepExpired(now: number, ctx?: StoreCallContext, beforeExpire?: ExpireHook): Promise<number> {
    checkNow(now, "sweepExpired");
    let removed = 0;
    for (const layout of await this.sweepLayouts(ctx))
      removed += await sweepExpiredSessions(this.logs, layout, now, beforeExpire);
    return removed;
  }

  /**
   * The heads with a lease, earliest `lease.expiresAt` first (see `SessionStore.listLeasedHeads`), over
   * what `sweepExpired` covers (without `ctx`: every tenant directory); expired heads not yet swept are
   * included (as `getHead` returns them), garbled heads skipped. Cost: reads the end of every session log.
   */
  async listLeasedHeads(limit: number, ctx?: StoreCallContext): Promise<SessionHead[]> {
    await this.logs.ready;
    checkLeasedHeadsLimit(limit);
    const heads: SessionHead[] = [];
    for (const layout of await this.sweepLayouts(ctx))
      for (const { head } of await readAllHeads(layout, this.logs, { skipCorrupt: true })) heads.push(head);
    return earliestLeases(heads, limit);
  }

  /**
   * Every head of this call's directory (expired ones not yet swept
   * included), sessionId ascending, after `afterSessionId`, at most `limit`
   * (see `SessionStore.scanHeads`). DATA_LOSS when a head is garbled. Cost:
   * like `listHeads`, every call reads the end of every session log.
   */
  async scanHeads(afterSessionId: string | undefined, limit: number, ctx?: StoreCallContext): Promise<SessionHead[]> {
    await this.logs.ready;
    const layout = this.layout(ctx, false);
    return headsAfter(
      (await readAllHeads(layout, this.logs)).map((h) => h.head),
      afterSessionId,
      limit,
    );
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
    return this.statuses.subscribe(new StoreLayout(base), snapshotId, signal, () => {
      this.layout(ctx, true); // fs.watch needs the sessions directory
    });
  }

  /** Number of directories currently watched for status changes (each with OS watchers and/or a poll timer). */
  get activeWatcherCount(): number {
    return this.statuses.activeWatcherCount;
  }

  /** Number of open chunk log watchers (each with an OS watcher and/or poll timer). */
  get activeChunkWatcherCount(): number {
    return this.chunkLogs.activeWatcherCount;
  }

  /** Ends every subscription and chunk watcher, closes every watcher and descriptor, and releases the session locks this process keeps. Idempotent. */
  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.chunkLogs.closeAll();
    this.statuses.closeAll();
    await this.logs.closeAll();
  }
}
