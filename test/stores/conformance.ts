import { afterEach, describe } from "vitest";
import type { SessionStore, SnapshotSubscriber } from "../../stores/snapshot-store.js";
import { describeChains } from "./conformance-chains.js";
import { describeChunks } from "./conformance-chunks.js";
import { describeCommit } from "./conformance-commit.js";
import { describeHeadScan } from "./conformance-head-scan.js";
import { describeLeasedHeads } from "./conformance-leased-heads.js";
import { describeLifecycle } from "./conformance-lifecycle.js";
import { describeListing } from "./conformance-listing.js";
import { describeRecords } from "./conformance-records.js";
import { describeRequests } from "./conformance-requests.js";
import { describeStatus } from "./conformance-status.js";
import { describeWriters } from "./conformance-writers.js";
import { describeWebhookOutbox } from "./conformance-webhooks.js";
import { describeToolJournal } from "./conformance-tool-journal.js";
import { describeOwnership } from "./ownership-conformance.js";
import type { SharedStoreDescriptor } from "./shared-store.js";
import { checkpointRecord, commitRecord, counterState, pendingRecord, type CounterState } from "./snapshot-factory.js";

export type { SharedStoreDescriptor } from "./shared-store.js";

/** What a store factory hands the conformance suite. */
export interface StoreUnderTest {
  /** A fresh, empty store (its own directory / collection prefix). */
  store: SessionStore<CounterState> & SnapshotSubscriber;
  /** Open subscription resources (subscribers, watchers, change streams); 0 when idle. */
  openResources(): number;
  /** Extra teardown after `store.close()`. */
  cleanup?(): Promise<void>;
  /**
   * For stores several processes can share: how a child process opens this
   * same store (`{kind: "sql", uri}` or `{kind: "mongodb", uri, database,
   * collectionPrefix}`). The cross-process tests run only when it is set.
   */
  crossProcess?: SharedStoreDescriptor;
  /**
   * Everything the store holds, in a form `toEqual` can compare (the memory
   * store's map sizes, the file store's paths, MongoDB's document counts per
   * collection). The lifecycle tests check that deleting or sweeping a
   * session brings it back exactly to what it was before the session was
   * created: nothing of the session is left behind. Optional: without it
   * they check only through the store's reads.
   */
  footprint?(): Promise<unknown>;
  /**
   * True once every open chunk watcher has finished starting (MongoDB: its
   * change stream is established and caught up); the negative wake-up checks
   * start waiting only then. Unset: watchers start at the call.
   */
  watchersSettled?(): boolean;
}

/** Registration options of {@link runStoreConformance}. */
export interface ConformanceOptions {
  /** The store can be shared by several processes (file, MongoDB): also register the cross-process tests. */
  sharedAcrossProcesses?: boolean;
  /** The store keeps a namespace per tenant (the file store's path prefixes): also register the tenant tests. */
  separatesTenants?: boolean;
  /**
   * The store keeps a tool-call journal per turn (`ToolResultJournal`): also
   * register its tests. Every store but the deprecated file store does.
   */
  keepsToolJournal?: boolean;
}

/**
 * The behaviour every session-ledger store ({@link SessionStore} +
 * {@link SnapshotSubscriber}) must have. `factory` returns a fresh, empty
 * store for each test.
 */
export function runStoreConformance(
  name: string,
  factory: () => Promise<StoreUnderTest>,
  options: ConformanceOptions = {},
): void {
  describe(`${name} store conformance`, () => {
    const opened: StoreUnderTest[] = [];
    afterEach(async () => {
      for (const t of opened.splice(0)) {
        await t.store.close?.();
        await t.cleanup?.();
      }
    });
    const fresh = async (): Promise<StoreUnderTest> => {
      const t = await factory();
      opened.push(t);
      return t;
    };

    describeOwnership(fresh);
    describeCommit(fresh);
    describeRequests(fresh);
    describeChains(fresh);
    describeRecords(fresh);
    describeStatus(fresh);
    describeListing(fresh);
    describeWriters(fresh, name, options);
    // Each lifecycle test skips itself when the store lacks listHeads/deleteSession/sweepExpired.
    describeLifecycle(fresh);
    describeLeasedHeads(fresh, options);
    describeHeadScan(fresh);
    describeChunks(fresh, name, options);
    describeWebhookOutbox(fresh, options);
    if (options.keepsToolJournal) describeToolJournal(fresh);
  });
}

// Re-exported for store test files that add store-specific cases.
export { checkpointRecord, commitRecord, counterState, pendingRecord, type CounterState };
