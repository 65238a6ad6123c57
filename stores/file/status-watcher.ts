import { watch, type FSWatcher } from "node:fs";
import type { StatusChannel, StatusObservation } from "../status-channel.js";
import { StatusSubscribers } from "../status-subscribers.js";

/** Tuning for {@link StatusWatcher}. */
export interface StatusWatcherOptions {
  /** Poll interval for the fallback re-read of subscribed files; <= 0 disables polling. Default 500 ms. */
  pollIntervalMs?: number;
}

/** Where a {@link StatusWatcher} looks, and how it reads a status. */
export interface StatusSource {
  /** The directories to watch: a change of a file in one of them whose name `relevant` accepts re-reads every subscribed status. */
  dirs: readonly string[];
  relevant: (filename: string) => boolean;
  /** The snapshot's current status and version, undefined while it does not exist. */
  read: (snapshotId: string) => StatusObservation | undefined;
}

/**
 * Observes status changes of the snapshots of one store directory, including
 * changes written by other processes: an `fs.watch` on the directories that
 * hold them (instant on Linux/macOS) plus a cheap poll; both re-read the
 * subscribed statuses through `source.read` (which reads line headers, never
 * whole records). Both paths, and the store's own in-process writes, feed the
 * same per-subscriber {@link StatusChannel}, whose version gate delivers each
 * change exactly once. The watchers and the timer exist only while there are
 * subscribers.
 */
export class StatusWatcher {
  private readonly channels = new StatusSubscribers();
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<string>();
  private flushScheduled = false;

  /** `onIdle` runs when the last subscriber leaves (the owner may drop this watcher). */
  constructor(
    private readonly source: StatusSource,
    private readonly options: StatusWatcherOptions,
    private readonly onIdle: () => void,
  ) {}

  /** True while an OS watcher or poll timer is open. */
  get active(): boolean {
    return this.watchers.length > 0 || this.timer !== undefined;
  }

  /** Adds a subscriber for `snapshotId` and delivers the snapshot's current status to it (once it exists). */
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
    for (const dir of this.source.dirs) {
      try {
        const watcher = watch(dir, { persistent: false }, (_event, filename) => {
          if (typeof filename === "string" && this.source.relevant(filename)) this.checkAll();
        });
        watcher.on("error", () => {
          watcher.close();
          this.watchers = this.watchers.filter((w) => w !== watcher);
        });
        this.watchers.push(watcher);
      } catch {
        // e.g. inotify limit reached, or the directory is not there yet: the poll still delivers
      }
    }
    const interval = this.options.pollIntervalMs ?? 500;
    if (interval > 0) {
      this.timer = setInterval(() => this.checkAll(), interval);
      this.timer.unref();
    }
  }

  private stop(): void {
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private checkAll(): void {
    for (const id of this.channels.ids()) this.check(id);
  }

  /** Coalesces checks of one ID within a tick, then re-reads its status. */
  private check(snapshotId: string): void {
    if (!this.channels.has(snapshotId)) return;
    this.pending.add(snapshotId);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const ids = [...this.pending];
      this.pending.clear();
      for (const id of ids) this.read(id);
    });
  }

  private read(snapshotId: string): void {
    try {
      const observation = this.source.read(snapshotId);
      if (observation) this.deliver(snapshotId, observation);
    } catch {
      // unreadable right now; the next event or poll retries
    }
  }
}
