import type { StatusChannel, StatusObservation } from "./status-channel.js";

/**
 * The status subscribers of one store (or one watched directory), grouped by
 * snapshot ID: the registry every store's `subscribeStatus` fans observations
 * out through. It holds no I/O of its own; owners start and stop their
 * watchers from {@link StatusSubscribers.isEmpty}.
 */
export class StatusSubscribers {
  private readonly byId = new Map<string, Set<StatusChannel>>();

  /** Total number of subscribed channels. */
  get size(): number {
    let n = 0;
    for (const set of this.byId.values()) n += set.size;
    return n;
  }

  /** True when no channel is subscribed to any ID. */
  get isEmpty(): boolean {
    return this.byId.size === 0;
  }

  /** The IDs with at least one subscriber. */
  ids(): IterableIterator<string> {
    return this.byId.keys();
  }

  /** True when `snapshotId` has at least one subscriber. */
  has(snapshotId: string): boolean {
    return this.byId.has(snapshotId);
  }

  /** Subscribes `channel` to `snapshotId`. */
  add(snapshotId: string, channel: StatusChannel): void {
    let set = this.byId.get(snapshotId);
    if (!set) this.byId.set(snapshotId, (set = new Set()));
    set.add(channel);
  }

  /** Unsubscribes `channel`; an ID whose last channel leaves is dropped. */
  remove(snapshotId: string, channel: StatusChannel): void {
    const set = this.byId.get(snapshotId);
    set?.delete(channel);
    if (set?.size === 0) this.byId.delete(snapshotId);
  }

  /** Offers an observation to every channel subscribed to `snapshotId` (each channel's gate dedups). */
  deliver(snapshotId: string, observation: StatusObservation): void {
    for (const channel of this.byId.get(snapshotId) ?? []) channel.push(observation);
  }

  /** Ends every channel with `err` (see StatusChannel.fail); each one is removed through its owner's `onClose`. */
  failAll(err: Error): void {
    for (const set of [...this.byId.values()]) for (const channel of [...set]) channel.fail(err);
  }

  /** Closes every channel (each one's close removes it through its owner's `onClose`). */
  closeAll(): void {
    for (const set of [...this.byId.values()]) for (const channel of [...set]) channel.close();
  }
}
