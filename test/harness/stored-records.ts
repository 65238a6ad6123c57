import type { SessionState } from "../../src/types/session-state.js";
import { FileSessionStore } from "../../stores/file-store.js";
import { stateOfChain } from "../../stores/ledger/state-chain.js";
import type { SnapshotRecord } from "../../stores/snapshot-store.js";

/**
 * What a file store directory holds for a snapshot, read through a second
 * store instance on the same directory (as another process would): the raw
 * record and its rebuilt, untransformed state.
 */
export async function storedSnapshot(
  dir: string,
  snapshotId: string,
): Promise<{ record: SnapshotRecord; state: SessionState | undefined }> {
  const store = new FileSessionStore(dir);
  try {
    const record = await store.getRecord(snapshotId);
    if (!record) throw new Error(`snapshot ${snapshotId} is not in ${dir}`);
    const chain = await store.getChain(snapshotId);
    return { record, state: chain ? stateOfChain(chain) : undefined };
  } finally {
    await store.close();
  }
}
