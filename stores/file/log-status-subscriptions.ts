import type { SnapshotStatus } from "../../src/types/snapshot.js";
import { isValidSnapshotId } from "../snapshot-identity.js";
import { StatusChannel, type StatusObservation } from "../status-channel.js";
import type { SessionLogs } from "./session-logs.js";
import { StatusWatcher } from "./status-watcher.js";
import { sessionKeyOfLog, SNAPSHOT_MAP_FILE, type StoreLayout } from "./store-layout.js";

/**
 * The status subscriptions of a file store: one `StatusWatcher` per store (or
 * tenant prefix) directory with subscribers, watching `sessions/` and the
 * snapshot map, reading a snapshot's status and version from its record
 * line's header (`SessionLogView`).
 */
export class LogStatusSubscriptions {
  private readonly watchers = new Map<string, StatusWatcher>();

  constructor(
    private readonly logs: SessionLogs,
    private readonly pollIntervalMs: number | undefined,
  ) {}

  /**
   * The current status of `snapshotId` in `layout` (once it exists), then
   * every change by any process, until `signal` aborts. `prepare` runs before
   * the first watch starts (it creates the directories to watch); when it
   * throws, the subscription ends and the error is thrown.
   */
  subscribe(
    layout: StoreLayout,
    snapshotId: string,
    signal: AbortSignal,
    prepare: () => void,
  ): AsyncIterable<SnapshotStatus> {
    const base = layout.base;
    let watcher = this.watchers.get(base);
    if (!watcher) {
      const created: StatusWatcher = new StatusWatcher(
        {
          dirs: [layout.base, layout.sessionsDir],
          relevant: (name) => name === SNAPSHOT_MAP_FILE || sessionKeyOfLog(name) !== undefined,
          read: (id) => this.statusOf(layout, id),
        },
        { pollIntervalMs: this.pollIntervalMs },
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
      prepare();
    } catch (err) {
      channel.close();
      throw err;
    }
    this.watchers.set(base, owner);
    owner.add(snapshotId, channel);
    return channel;
  }

  /** Tells the subscribers of `snapshotId` in `layout` about a write of this process. */
  deliver(layout: StoreLayout, snapshotId: string, observation: StatusObservation): void {
    this.watchers.get(layout.base)?.deliver(snapshotId, observation);
  }

  /** Number of directories currently watched (each with OS watchers and/or a poll timer). */
  get activeWatcherCount(): number {
    return [...this.watchers.values()].filter((w) => w.active).length;
  }

  /** Ends every subscription and closes every watcher. */
  closeAll(): void {
    for (const watcher of [...this.watchers.values()]) watcher.closeAll();
    this.watchers.clear();
  }

  /** The record's status and version from its log line's header, or undefined while it does not exist. */
  private statusOf(layout: StoreLayout, snapshotId: string): StatusObservation | undefined {
    const key = this.logs.map(layout).lookup(snapshotId);
    const logged = key === undefined ? undefined : this.logs.view(layout.logPathOfKey(key))?.records.get(snapshotId);
    return logged && { status: logged.status, version: logged.version };
  }
}
