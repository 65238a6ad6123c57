import { mkdirSync } from "node:fs";
import { mkdir, rmdir, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import { checkAppend, checkChunkLogKey, checkKeepUntil, checkNow, checkRead } from "../chunk-arguments.js";
import type { ChunkLog, ChunkLogKey, StoredChunk } from "../chunk-log.js";
import type { KeyedMutex } from "../keyed-mutex.js";
import { isValidSnapshotId } from "../snapshot-identity.js";
import type { StoreCallContext } from "../snapshot-store.js";
import { WakeChannel } from "../wake-channel.js";
import { syncDirectory } from "./directory-sync.js";
import { appendChunkLines, chunkLine, ChunkFileReader, readKeepUntil, writeKeepUntil } from "./chunk-file.js";
import { ChunkFileWatcher } from "./chunk-watcher.js";
import { namesIn, unlinkIfExists } from "./session-files.js";
import { CHUNK_KEEP_SUFFIX, CHUNK_LOG_SUFFIX, isSessionKey, type StoreLayout } from "./store-layout.js";

/** What the chunk logs need of the file store. */
export interface ChunkLogContext {
  /** The layout of this call's directory after its format check; `write` also creates its directories. */
  layout(ctx: StoreCallContext | undefined, write: boolean): StoreLayout;
  /** The layouts a sweep covers: this call's directory, or (no context, tenant prefixes) every store directory. */
  sweepLayouts(ctx: StoreCallContext | undefined): Promise<StoreLayout[]>;
  /** The store's in-process mutex (a log's writes, keeps and removal are serialised on the log's path). */
  mutex: KeyedMutex;
  /** fsync appended lines (and new files' directories). */
  fsync: boolean;
  /** Poll interval of the watchers' fallback; <= 0 disables it. */
  pollIntervalMs: number;
}

interface LogFiles {
  dir: string;
  log: string;
  keep: string;
}

function filesOf(layout: StoreLayout, key: ChunkLogKey): LogFiles {
  const log = layout.chunkLogPath(key.sessionId, key.snapshotId);
  return { dir: dirname(log), log, keep: layout.chunkKeepPath(key.sessionId, key.snapshotId) };
}

const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === "ENOENT";

/**
 * The chunk logs of a file store (see {@link ChunkLog}): one append-only
 * file per log, `<store or tenant directory>/chunks/<session key>/<snapshotId>.jsonl`
 * (see chunk-file.ts for its lines and torn-line handling), its keep-until
 * time the mtime of the empty `<snapshotId>.keep` beside it.
 *
 * Guarantees: `appendChunks` resolves once the lines are fsynced (unless the
 * store's `fsync` is off); the keep file is moved first, so a sweep in any
 * process never removes a log while its writer appends with a live
 * keep-until. Reads return complete lines only (a torn last line is
 * ignored, and cut off by the next append). A log is removed whole: one
 * unlink of its file (`sweepChunks`), or with its session's directory
 * (`deleteSession`, `sweepExpired`); a writer that appends to a log whose
 * keep-until had passed and which was swept meanwhile starts a new log (as
 * does one racing its session's deletion). The keep-until time is an mtime
 * and is not fsynced: after a power loss it may be the one before.
 * Watchers see appends by every process on the host (see ChunkFileWatcher).
 * Modes: directories 0700, files 0600.
 */
export class FileChunkLogs implements ChunkLog {
  private readonly reader = new ChunkFileReader();
  /** The open watchers by log path, each with the channel it wakes. */
  private readonly watchers = new Map<string, Map<ChunkFileWatcher, WakeChannel>>();

  constructor(private readonly c: ChunkLogContext) {}

  /** Moves the keep-until time (only later), then appends and fsyncs the chunks' lines. */
  async appendChunks(
    key: ChunkLogKey,
    chunks: readonly StoredChunk[],
    keepUntil: number,
    ctx?: StoreCallContext,
  ): Promise<void> {
    const json = checkAppend(key, chunks, keepUntil);
    let text: string;
    try {
      text = chunks.map((stored, i) => chunkLine(stored.sequence, json[i]!)).join("");
    } catch (err) {
      throw new AgentError(
        "RESOURCE_EXHAUSTED",
        `appendChunks: ${chunks.length} chunks of snapshot ${key.snapshotId} are too large to append at once (${(err as Error).message}); append them in smaller batches`,
        { cause: err },
      );
    }
    const layout = this.c.layout(ctx, true);
    const files = filesOf(layout, key);
    await this.c.mutex.run(files.log, async () => {
      // A sweep may remove the (empty) directory between our mkdir and our writes: retry once.
      for (let attempt = 0; ; attempt++) {
        try {
          await this.makeDirectory(layout, files.dir);
          await writeKeepUntil(files.keep, keepUntil, true);
          await appendChunkLines(files.log, text, this.c.fsync);
          return;
        } catch (err) {
          if (!isMissing(err) || attempt > 0) throw err;
        }
      }
    });
    for (const watcher of this.watchers.get(files.log)?.keys() ?? []) watcher.changed();
  }

  /** Complete lines after `afterSequence`, at most `limit`, through the reader's line index. */
  async readChunks(
    key: ChunkLogKey,
    afterSequence: number,
    limit: number,
    ctx?: StoreCallContext,
  ): Promise<StoredChunk[]> {
    checkRead(key, afterSequence, limit);
    const files = filesOf(this.c.layout(ctx, false), key);
    return limit === 0 ? [] : this.reader.read(files.log, afterSequence, limit);
  }

  /** True when the log file exists and is not empty. */
  async hasChunks(key: ChunkLogKey, ctx?: StoreCallContext): Promise<boolean> {
    checkChunkLogKey(key, "hasChunks");
    return (await sizeOf(filesOf(this.c.layout(ctx, false), key).log)) > 0;
  }

  /** Sets the keep file's mtime when the log exists. */
  async keepChunks(key: ChunkLogKey, keepUntil: number, ctx?: StoreCallContext): Promise<void> {
    checkChunkLogKey(key, "keepChunks");
    checkKeepUntil(keepUntil, "keepChunks");
    const files = filesOf(this.c.layout(ctx, false), key);
    await this.c.mutex.run(files.log, async () => {
      if ((await sizeOf(files.log)) < 0) return;
      try {
        await writeKeepUntil(files.keep, keepUntil, false);
      } catch (err) {
        if (!isMissing(err)) throw err; // removed meanwhile: nothing to keep
      }
    });
  }

  /**
   * Watches the log's directory (created now if needed, so the OS watcher
   * can attach) for appends by any process; see ChunkFileWatcher.
   * FAILED_PRECONDITION (thrown) when the directory holds another store format.
   */
  watchChunks(key: ChunkLogKey, signal: AbortSignal, ctx?: StoreCallContext): AsyncIterable<void> {
    checkChunkLogKey(key, "watchChunks");
    if (signal.aborted) return new WakeChannel(signal, () => undefined);
    const files = filesOf(this.c.layout(ctx, true), key);
    mkdirSync(files.dir, { recursive: true, mode: 0o700 });
    // The baseline is taken here, before the call returns: appends made before it never wake.
    const watcher = new ChunkFileWatcher(files.dir, basename(files.log), this.c.pollIntervalMs, () => channel.wake());
    const channel: WakeChannel = new WakeChannel(signal, () => this.removeWatcher(files.log, watcher));
    let open = this.watchers.get(files.log);
    if (!open) this.watchers.set(files.log, (open = new Map()));
    open.set(watcher, channel);
    watcher.start();
    return channel;
  }

  /**
   * Removes every log whose keep-until time is ≤ `now` (each re-checked and
   * unlinked under the log's mutex), orphaned keep files, and session chunk
   * directories left empty (except those this process watches). A log that
   * cannot be checked (e.g. an unreadable keep file) does not stop the pass:
   * every other log is still swept, then the pass rejects with the first such
   * error.
   */
  async sweepChunks(now: number, ctx?: StoreCallContext): Promise<number> {
    checkNow(now, "sweepChunks");
    let removed = 0;
    const failures: unknown[] = [];
    for (const layout of await this.c.sweepLayouts(ctx)) removed += await this.sweepLayout(layout, now, failures);
    if (failures.length > 0) throw failures[0];
    return removed;
  }

  /** Number of open watchers (each with an OS watcher and/or a poll timer). */
  get activeWatcherCount(): number {
    let n = 0;
    for (const open of this.watchers.values()) for (const watcher of open.keys()) if (watcher.active) n++;
    return n;
  }

  /** Ends every watcher's iterable and stops its watching. */
  closeAll(): void {
    for (const open of [...this.watchers.values()]) for (const channel of [...open.values()]) channel.close();
  }

  private async sweepLayout(layout: StoreLayout, now: number, failures: unknown[]): Promise<number> {
    let removed = 0;
    for (const key of await namesIn(layout.chunksDir)) {
      if (!isSessionKey(key)) continue;
      const dir = layout.chunkDirOfKey(key);
      const ids = new Set<string>();
      for (const name of await namesIn(dir)) {
        const suffix = name.endsWith(CHUNK_LOG_SUFFIX) ? CHUNK_LOG_SUFFIX : CHUNK_KEEP_SUFFIX;
        const id = name.endsWith(suffix) ? name.slice(0, -suffix.length) : "";
        if (isValidSnapshotId(id)) ids.add(id);
      }
      for (const id of ids) {
        const files = { dir, log: join(dir, `${id}${CHUNK_LOG_SUFFIX}`), keep: join(dir, `${id}${CHUNK_KEEP_SUFFIX}`) };
        if (await this.removeIfExpired(files, now).catch((err) => void failures.push(err))) removed++;
      }
      if (![...this.watchers.keys()].some((log) => dirname(log) === dir)) await rmdir(dir).catch(() => undefined); // not empty, or gone: fine
    }
    return removed;
  }

  /** Unlinks the log and its keep file when its keep-until is ≤ `now`; true when a log was removed. */
  private removeIfExpired(files: LogFiles, now: number): Promise<boolean> {
    return this.c.mutex.run(files.log, async () => {
      const keepUntil = await readKeepUntil(files.keep, files.log);
      if (keepUntil === undefined || keepUntil > now) return false;
      const removed = await unlinkIfExists(files.log);
      await unlinkIfExists(files.keep);
      this.reader.forget(files.log);
      for (const watcher of this.watchers.get(files.log)?.keys() ?? []) watcher.changed();
      return removed;
    });
  }

  private async makeDirectory(layout: StoreLayout, dir: string): Promise<void> {
    const created = await mkdir(dir, { recursive: true, mode: 0o700 });
    if (created !== undefined && this.c.fsync) {
      await syncDirectory(layout.chunksDir);
      await syncDirectory(layout.base);
    }
  }

  private removeWatcher(log: string, watcher: ChunkFileWatcher): void {
    watcher.close();
    const open = this.watchers.get(log);
    open?.delete(watcher);
    if (open?.size === 0) this.watchers.delete(log);
  }
}

/** The file's size, or -1 when it does not exist. */
async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if (isMissing(err)) return -1;
    throw err;
  }
}
