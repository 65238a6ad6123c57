/** The MongoDB session store. */
export { MongoSessionStore, type MongoSessionStoreConfig } from "./mongo-store.js";
export { MAX_DOCUMENT_BYTES } from "./snapshot-document.js";
