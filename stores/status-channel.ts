import type { SnapshotStatus } from "../src/types/snapshot.js";
import { SignalBoundChannel } from "./signal-bound-channel.js";

/** One observation of a snapshot's status; `version` orders observations of one row. */
export interface StatusObservation {
  status: SnapshotStatus;
  /** Monotonic per row (store-defined); observations at or below the last delivered version are dropped. */
  version: number;
}

/**
 * The per-subscriber dedup gate and queue behind every store's
 * `subscribeStatus`. Observations may arrive from several sources (in-process
 * writes, a file watcher, a poller, a change stream, a re-read after resume);
 * the channel delivers each status change exactly once and in order: it drops
 * an observation whose version is not newer than the last delivered one, or
 * whose status equals the last delivered status. The iterable ends when the
 * signal aborts or {@link StatusChannel.close} is called (the lifecycle of
 * {@link SignalBoundChannel}).
 */
export class StatusChannel extends SignalBoundChannel implements AsyncIterable<SnapshotStatus> {
  private lastVersion = Number.NEGATIVE_INFINITY;
  private lastStatus: SnapshotStatus | undefined;
  private readonly queue: SnapshotStatus[] = [];

  /** Offers an observation; returns true when it was queued for delivery. */
  push(observation: StatusObservation): boolean {
    if (this.isClosed) return false;
    if (observation.version <= this.lastVersion) return false;
    this.lastVersion = observation.version;
    if (observation.status === this.lastStatus) return false;
    this.lastStatus = observation.status;
    this.queue.push(observation.status);
    this.notify();
    return true;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SnapshotStatus> {
    try {
      for (;;) {
        if (this.queue.length > 0) {
          yield this.queue.shift()!;
          continue;
        }
        if (this.isClosed) return;
        await this.nextNotice();
      }
    } finally {
      this.close();
    }
  }
}
