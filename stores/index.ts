/** Session stores: the contract and its implementations. */
export * from "./snapshot-store.js";
export type { DetachedWork, DetachedWorkRun, DetachedWorkPrincipal } from "../src/types/detached-work.js";
export { InMemorySessionStore } from "./memory-store.js";
export { StatusChannel, type StatusObservation } from "./status-channel.js";
export { isChunkLog, type ChunkLog, type ChunkLogKey, type StoredChunk } from "./chunk-log.js";
export { WakeChannel } from "./wake-channel.js";
export { StatusSubscribers } from "./status-subscribers.js";
export { KeyedMutex } from "./keyed-mutex.js";
export { newSnapshotId, isValidSnapshotId, assertValidSnapshotId } from "./snapshot-identity.js";
export { headToStore, keepIdentity, assertRecordShape } from "./record-identity.js";
export {
  validateLabels,
  labelsMatch,
  MAX_LABELS,
  MAX_LABEL_KEY_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
} from "./session-labels.js";
export {
  checkSessionQuery,
  compareHeadsNewestFirst,
  encodeHeadPageToken,
  decodeHeadPageToken,
  headMatches,
  isExpired,
  pageOfHeads,
  DEFAULT_HEAD_PAGE_SIZE,
  MAX_HEAD_PAGE_SIZE,
  type CheckedSessionQuery,
  type HeadSortKey,
} from "./session-query.js";
export { diffState, applyStateDelta, addArtifact, jsonBytes } from "./ledger/state-delta.js";
export {
  DEFAULT_CHECKPOINT_POLICY,
  recordStateFields,
  type CheckpointPolicy,
  type RecordStateFields,
} from "./ledger/checkpoint-policy.js";
export { walkChain, chainFrom, stateOfChain, type RecordReader } from "./ledger/state-chain.js";
export { deepFreeze } from "./ledger/frozen-value.js";
export {
  compareNewestFirst,
  encodePageToken,
  decodePageToken,
  pageOf,
  pageStartIndex,
  pageSizeOf,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type SnapshotSortKey,
} from "./snapshot-order.js";
export { FileStoreArchive } from "./file-archive/file-store-archive.js";
export type { CopySource } from "./copy/copy-source.js";
export { openStoreFromUri, mongoConfigFromUri } from "./store-from-uri.js";
export { SqlSessionStore } from "./sql/sql-store.js";
export { SqliteEngine, type SqliteEngineOptions } from "./sql/sqlite-engine.js";
export { openSqlStore, isSqlStoreUri } from "./sql/sql-store-uri.js";
export type { SqlEngine, SqlExecutor, SqlTransaction, SqlChange, SqlDialect } from "./sql/sql-engine.js";
