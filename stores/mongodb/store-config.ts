import type { MongoClient, MongoClientOptions } from "mongodb";
import type { StoreLogger } from "./store-logger.js";

/** Configuration of {@link MongoSessionStore}. */
export interface MongoSessionStoreConfig {
  /**
   * Connection string (`mongodb://…` or `mongodb+srv://…`). Ignored when
   * `client` is given. Its options are honoured (they override the store's
   * defaults); its path names the database (see `database`) but is never the
   * authentication database: set `authSource` for that.
   */
  uri?: string;
  /**
   * An existing client to use; the store then does not close it. Its
   * explicit write concern, read concern and read preference are honoured
   * like a URI's (see {@link MongoSessionStore.warnings}).
   */
  client?: MongoClient;
  /** Database name. Default: the URI's path, else `agentd`. */
  database?: string;
  /**
   * Prepended to the collection names `heads`, `snapshots`, `checkpoint_chunks`,
   * `stream_chunks` and `store_meta` (tenant isolation per prefix). Default empty.
   */
  collectionPrefix?: string;
  /** Extra driver options when the store creates the client. */
  clientOptions?: MongoClientOptions;
  /** `updateRecord` gives up after this many version conflicts (ABORTED). Default 1000. */
  maxConflictRetries?: number;
  /**
   * Commits, reads and `updateRecord` retry transient failures (no primary,
   * network errors, step-down, write-concern timeout) for this long (or
   * until the caller's deadline, when sooner) before they fail UNAVAILABLE,
   * so calls and a detached run's writes ride out an election. A call that
   * twice in a row finds no server within serverSelectionTimeoutMS fails
   * sooner (the store is down). Default 30 s; 0 disables the retry.
   */
  failoverWindowMs?: number;
  /**
   * A `listRecords` page with state ends early (with a next-page token) once
   * its records' state reaches this many bytes; at least one record per
   * page. Default 64 MiB.
   */
  listPageStateBytes?: number;
  /** Receives the start-up warnings and the change stream's endings and reopens (a pino logger fits). */
  logger?: StoreLogger;
  /**
   * `sweepExpired`'s orphan pass (records and chunks of sessions whose head
   * MongoDB's TTL index removed): index entries of `snapshots` and of
   * `checkpoint_chunks` examined per sweep, round robin. Default 1000; 0
   * disables the pass.
   */
  orphanScanBatch?: number;
  /**
   * The orphan pass leaves records and chunks stored less than this long
   * before the sweep's `now` alone (a commit writes its record before its
   * head; also covers clock skew between instances). Default 10 minutes.
   */
  orphanGraceMs?: number;
  /**
   * How long after a session expires MongoDB's TTL index may remove its head
   * by itself: heads are written with `expireAt` = `expiresAt` plus this, and
   * `sweepExpired` still deletes a session once `expiresAt` has passed. So an
   * agentd sweep, not the TTL monitor, expires sessions (what `session.expired`
   * webhooks need: the sweep queues the event before it deletes); the TTL index
   * stays a backstop for when no agentd sweeps for this long. Heads written
   * before keep their `expireAt`. Default 0 (the TTL index fires at expiry);
   * `agentd serve` sets 1 hour when webhooks are on.
   */
  ttlGraceMs?: number;
}
