/** The MongoDB session store. */
export { MongoSessionStore, type MongoSessionStoreConfig } from "./mongo-store.js";
export { MAX_DOCUMENT_BYTES, CHECKPOINT_INLINE_BYTES } from "./record-document.js";
