import type { SnapshotStatus } from "../../src/types/snapshot.js";
import type { SnapshotSubscriber } from "../../stores/snapshot-store.js";

/** A running status subscription whose deliveries are collected in order. */
export interface StatusRecorder {
  /** Every status delivered so far, in order (live: grows as deliveries arrive). */
  readonly seen: SnapshotStatus[];
  /** Aborts the subscription and resolves once its iteration has ended. */
  stop(): Promise<void>;
}

/** Subscribes to `snapshotId` on `store` and records every delivered status until {@link StatusRecorder.stop}. */
export function recordStatuses(store: SnapshotSubscriber, snapshotId: string): StatusRecorder {
  const controller = new AbortController();
  const seen: SnapshotStatus[] = [];
  const done = (async () => {
    for await (const status of store.subscribeStatus(snapshotId, controller.signal)) seen.push(status);
  })();
  return {
    seen,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}
