import {
  ReadConcern,
  type DbOptions,
  type MongoClient,
  type ReadConcernLevel,
  type ReadPreferenceMode,
  type W,
} from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";

/**
 * The write concern the store uses unless the URI (or the given client)
 * says otherwise: acknowledged once a majority of the replica set's
 * data-bearing voting members have the write in their journal, so an
 * acknowledged turn survives any failover; a write waits at most 10 s for
 * that (then WriteConcernFailed → UNAVAILABLE) instead of hanging while a
 * majority is unreachable.
 */
export const DEFAULT_WRITE_CONCERN = { w: "majority", journal: true, wtimeoutMS: 10_000 } as const;

/**
 * The read concern the store uses unless the URI says otherwise: only data a
 * majority has acknowledged, so a reader never acts on a write a failover
 * then rolls back. Together with primary reads and majority writes a reader
 * sees every write acknowledged before its read started.
 */
export const DEFAULT_READ_CONCERN = { level: "majority" } as const;

/** The read preference the store uses unless the URI says otherwise: every read from the primary (read-your-writes). */
export const DEFAULT_READ_PREFERENCE: ReadPreferenceMode = "primary";

/** The effective write concern, read concern and read preference of a store, and what weakens them. */
export interface StoreConsistency {
  /**
   * Options for `client.db()`: each of the store's defaults, replaced by the
   * value the connection string (or the given client's options) sets
   * explicitly. Every collection and change stream of the store inherits them.
   */
  db: DbOptions;
  /** One actionable line per explicit setting weaker than the default (empty when none). */
  warnings: string[];
}

/** The client options this module reads (a subset of the driver's `MongoClient.options`). */
export type ConsistencyOptions = Pick<MongoClient["options"], "writeConcern" | "readConcern" | "readPreference">;

/**
 * The store's consistency settings for a client: majority + journaled
 * writes, majority reads, primary reads, except where the client's options
 * (in practice the URI: `w`, `journal`, `wtimeoutMS`, `readConcernLevel`,
 * `readPreference`) set them; a weaker explicit setting is honoured and
 * reported in `warnings`. Unacknowledged writes (`w=0`) are refused with
 * INVALID_ARGUMENT: commits are compare-and-set and need the server's answer.
 */
export function consistencyOf(options: ConsistencyOptions): StoreConsistency {
  const warnings: string[] = [];
  const explicitWrite = options.writeConcern;
  const w: W = explicitWrite?.w ?? DEFAULT_WRITE_CONCERN.w;
  const journal = explicitWrite?.journal ?? DEFAULT_WRITE_CONCERN.journal;
  const wtimeoutMS = explicitWrite?.wtimeoutMS ?? DEFAULT_WRITE_CONCERN.wtimeoutMS;
  if (w === 0) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      "the MongoDB store URI sets w=0 (unacknowledged writes); agentd's commits are compare-and-set and need the server's answer: " +
        "remove w from the URI (agentd writes with w=majority, journaled)",
    );
  }
  if (w !== "majority") {
    warnings.push(
      `the MongoDB store URI sets w=${String(w)}: a write is acknowledged before a majority of the replica set has it, so an ` +
        `acknowledged turn can be rolled back by a failover (agentd's default is w=majority; remove w from the URI unless ${String(w)} is a majority of your set)`,
    );
  }
  if (journal === false) {
    warnings.push(
      "the MongoDB store URI sets journal=false: a write is acknowledged before it reaches the journal, so a crash can lose an acknowledged turn " +
        "(agentd's default is journal=true; remove journal from the URI)",
    );
  }
  const level = options.readConcern?.level ?? DEFAULT_READ_CONCERN.level;
  if (level === "local" || level === "available") {
    warnings.push(
      `the MongoDB store URI sets readConcernLevel=${level}: reads may return writes a failover later rolls back ` +
        "(agentd's default is majority; remove readConcernLevel from the URI)",
    );
  }
  const mode = options.readPreference?.mode ?? DEFAULT_READ_PREFERENCE;
  if (mode !== "primary") {
    warnings.push(
      `the MongoDB store URI sets readPreference=${mode}: reads may come from a secondary that has not caught up, so a snapshot just ` +
        "written can read as NOT_FOUND and updates retry on stale data (agentd's default is primary; remove readPreference from the URI)",
    );
  }
  return {
    db: {
      writeConcern: { w, journal, wtimeoutMS },
      readConcern: new ReadConcern(level as ReadConcernLevel),
      readPreference: options.readPreference ?? DEFAULT_READ_PREFERENCE,
    },
    warnings,
  };
}
