import type { SessionState } from "../../src/types/session-state.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import { stateOfChain } from "../../stores/ledger/state-chain.js";
import type { SnapshotRecord } from "../../stores/snapshot-store.js";

/**
 * What the store at `uri` (e.g. an `sqlite:` file an agentd serves) holds for
 * a snapshot, read through a second store instance (as another process
 * would): the raw record and its rebuilt, untransformed state.
 */
export async function storedSnapshot(
  uri: string,
  snapshotId: string,
): Promise<{ record: SnapshotRecord; state: SessionState | undefined }> {
  const store = await openStoreFromUri(uri);
  try {
    const record = await store.getRecord(snapshotId);
    if (!record) throw new Error(`snapshot ${snapshotId} is not in ${uri}`);
    const chain = await store.getChain?.(snapshotId);
    return { record, state: chain ? stateOfChain(chain) : undefined };
  } finally {
    await store.close?.();
  }
}
