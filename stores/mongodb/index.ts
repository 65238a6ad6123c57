/** The MongoDB session store. */
export { MongoSessionStore, type MongoSessionStoreConfig } from "./mongo-store.js";
export { MAX_DOCUMENT_BYTES, CHECKPOINT_INLINE_BYTES } from "./record-document.js";
export { DEFAULT_WRITE_CONCERN, DEFAULT_READ_CONCERN, DEFAULT_READ_PREFERENCE } from "./consistency.js";
export { DEFAULT_FAILOVER_WINDOW_MS } from "./record-update.js";
export type { StoreLogger } from "./store-logger.js";
export type { StreamEndingReport } from "./status-stream.js";
