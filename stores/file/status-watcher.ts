import { watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import type { StatusChannel, StatusObservation } from "../status-channel.js";
import { StatusSubscribers } from "../status-subscribers.js";
import { readRecordHeader } from "./record-file.js";

/** Tuning for {@link DirectoryStatusWatcher}. */
export interface StatusWatcherOptions {
  /** Poll interval for the fallback re-read of subscribed files; <= 0 disables polling. Default 500 ms. */
  pollIntervalMs?: number;
}

/**
 * Observes status changes of the record files (`<snapshotId>.json`) in one
 * records directory, including changes written by other processes: an
 * `fs.watch` on the directory (instant on Linux/macOS; every record write is a
 * link or rename into place, which it reports) plus a cheap poll; both re-read
 * only the 1 KiB header of a subscribed file, never the whole record.
 * Both paths, and the store's own in-process writes, feed the same
 * per-subscriber {@link StatusChannel}, whose version gate delivers each change
 * exactly once. The watcher and the timer exist only while the directory has
 * subscribers.
 */
export class DirectoryStatusWatcher {
  private readonly channels = new StatusSubscribers();
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<string>();
  private flushScheduled = false;

  /** `onIdle` runs when the last subscriber leaves (the owner may drop this watcher). */
  constructor(
    private readonly dir: string,
    private readonly options: StatusWatcherOptions,
    private readonly onIdle: () => void,
  ) {}

  /** True while an OS watcher or poll timer is open. */
  get active(): boolean {
    return this.watcher !== undefined || this.timer !== undefined;
  }

  /** Adds a subscriber for `snapshotId` and delivers the file's current status to it (once the file exists). */
  add(snapshotId: string, channel: StatusChannel): void {
    this.channels.add(snapshotId, channel);
    this.start();
    this.check(snapshotId);
  }

  /** Removes a subscriber; stops watching when none remain. */
  remove(snapshotId: string, channel: StatusChannel): void {
    this.channels.remove(snapshotId, channel);
    if (this.channels.isEmpty) {
      this.stop();
      this.onIdle();
    }
  }

  /** Delivers an observation made by this process's own write. */
  deliver(snapshotId: string, observation: StatusObservation): void {
    this.channels.deliver(snapshotId, observation);
  }

  /** Closes every subscriber and stops watching. */
  closeAll(): void {
    this.channels.closeAll();
    this.stop();
  }

  private start(): void {
    if (this.active) return;
    try {
      this.watcher = watch(this.dir, { persistent: false }, (_event, filename) => {
        if (typeof filename === "string" && filename.endsWith(".json") && !filename.startsWith(".")) {
          this.check(filename.slice(0, -".json".length));
        }
      });
      this.watcher.on("error", () => {
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch {
      this.watcher = undefined; // e.g. inotify limit reached: the poll still delivers
    }
    const interval = this.options.pollIntervalMs ?? 500;
    if (interval > 0) {
      this.timer = setInterval(() => {
        for (const id of this.channels.ids()) this.check(id);
      }, interval);
      this.timer.unref();
    }
  }

  private stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Coalesces checks of one ID within a tick, then re-reads its header. */
  private check(snapshotId: string): void {
    if (!this.channels.has(snapshotId)) return;
    this.pending.add(snapshotId);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const ids = [...this.pending];
      this.pending.clear();
      for (const id of ids) void this.read(id);
    });
  }

  private async read(snapshotId: string): Promise<void> {
    try {
      const header = await readRecordHeader(join(this.dir, `${snapshotId}.json`));
      if (header) this.deliver(snapshotId, { status: header.status, version: header.version });
    } catch {
      // unreadable right now (e.g. replaced mid-read); the next event or poll retries
    }
  }
}
