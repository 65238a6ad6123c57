import { AgentError } from "../src/errors/agent-error.js";
import { isFileStoreUri } from "./file-store-uri.js";
import { InMemorySessionStore } from "./memory-store.js";
import { redactStoreUri } from "./redact-uri.js";
import type { StoreLogger } from "./mongodb/store-logger.js";
import type { SessionStore } from "./snapshot-store.js";
import { isSqlStoreUri, openSqlStore } from "./sql/sql-store-uri.js";

/** Options of {@link openStoreFromUri}. */
export interface OpenStoreOptions {
  /**
   * Where a store reports what an operator should know (a pino logger fits):
   * MongoDB logs weakened consistency settings of its URI at open and its
   * change stream's endings and reopens.
   */
  logger?: StoreLogger;
  /** MongoDB: the store's `ttlGraceMs` (how long after expiry the TTL index may remove a head by itself). */
  ttlGraceMs?: number;
}

/**
 * Opens the store a URI names (the CLI's `--store`):
 * - `memory:` — {@link InMemorySessionStore};
 * - `sqlite:./file.db`, `sqlite:/abs/file.db` — SqlSessionStore on SQLite
 *   (`node:sqlite`; relative paths resolve against the current directory);
 * - `postgres://…` / `postgresql://…` — SqlSessionStore on PostgreSQL (`pg`;
 *   `?schema=<name>` keeps the tables in that schema);
 * - `mongodb://…` / `mongodb+srv://…` — MongoSessionStore; the database is the
 *   URI's path (default `agentd`), the query parameter `collectionPrefix` sets the
 *   collection prefix (it is removed before the URI reaches the driver).
 * A retired file store (`file:<dir>`, read only by `FileStoreArchive` for
 * copy-store) and anything else fail with INVALID_ARGUMENT. The MongoDB and PostgreSQL
 * drivers and `node:sqlite` are loaded only when such a URI is opened.
 */
export async function openStoreFromUri(uri: string, options: OpenStoreOptions = {}): Promise<SessionStore> {
  const trimmed = uri.trim();
  if (trimmed === "memory:" || trimmed === "memory") return new InMemorySessionStore();
  if (isFileStoreUri(trimmed)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `store URI "${redactStoreUri(uri)}": the file store is retired and cannot be opened as a store; copy its sessions ` +
        `into SQLite with "agentd copy-store ${redactStoreUri(trimmed)} sqlite:<file>" (FileStoreArchive reads it)`,
    );
  }
  if (isSqlStoreUri(trimmed)) return openSqlStore(trimmed);
  if (trimmed.startsWith("mongodb://") || trimmed.startsWith("mongodb+srv://")) {
    const { MongoSessionStore } = await import("./mongodb/mongo-store.js");
    return new MongoSessionStore({
      ...mongoConfigFromUri(trimmed),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.ttlGraceMs !== undefined ? { ttlGraceMs: options.ttlGraceMs } : {}),
    });
  }
  throw new AgentError(
    "INVALID_ARGUMENT",
    `unknown store URI "${redactStoreUri(uri)}": use memory:, sqlite:<file>, postgres://user@host/database or mongodb://host[:port]/<database>[?collectionPrefix=<prefix>]`,
  );
}

/** Splits a MongoDB URI into the driver URI (without `collectionPrefix`), database and collection prefix. */
export function mongoConfigFromUri(uri: string): { uri: string; database: string; collectionPrefix: string } {
  const schemeEnd = uri.indexOf("://");
  const rest = uri.slice(schemeEnd + 3);
  const queryStart = rest.indexOf("?");
  const beforeQuery = queryStart >= 0 ? rest.slice(0, queryStart) : rest;
  const query = new URLSearchParams(queryStart >= 0 ? rest.slice(queryStart + 1) : "");
  const slash = beforeQuery.indexOf("/");
  const hosts = slash >= 0 ? beforeQuery.slice(0, slash) : beforeQuery;
  if (hosts.length === 0) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `invalid MongoDB URI "${redactStoreUri(uri)}": no host; use e.g. mongodb://127.0.0.1:27017/agentd`,
    );
  }
  const database = slash >= 0 ? decodeURIComponent(beforeQuery.slice(slash + 1)) : "";
  if (/[/\\. "$]/.test(database)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `invalid MongoDB database name "${database}" in store URI "${redactStoreUri(uri)}"`,
    );
  }
  const collectionPrefix = query.get("collectionPrefix") ?? "";
  query.delete("collectionPrefix");
  const driverQuery = query.toString();
  const driverUri = `${uri.slice(0, schemeEnd + 3)}${hosts}/${database ? encodeURIComponent(database) : ""}${driverQuery ? `?${driverQuery}` : ""}`;
  return { uri: driverUri, database: database || "agentd", collectionPrefix };
}
