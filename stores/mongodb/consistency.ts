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

/** The read preference of every store read, whatever the URI says (read-your-writes; a URI's other mode is warned about). */
export const DEFAULT_READ_PREFERENCE: ReadPreferenceMode = "primary";

/**
 * Read concerns agentd refuses at start, with why: `linearizable` is only
 * valid for single-document reads on the primary and not in change streams
 * or aggregations (and every read would wait for a majority round trip);
 * `snapshot` is only valid inside transactions and snapshot reads, which
 * agentd does not use (its finds and change streams would fail).
 */
const REFUSED_READ_CONCERNS: ReadonlyMap<string, string> = new Map([
  ["linearizable", "it is not supported by change streams or multi-document reads, which the store relies on"],
  ["snapshot", "it is only valid inside transactions, which the store does not use"],
]);

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
 * (in practice the URI: `w`, `journal`, `wtimeoutMS`, `readConcernLevel`)
 * set them; a weaker explicit setting is honoured and reported in
 * `warnings`. A `readPreference` other than primary is overridden (reads
 * stay on the primary: read-your-writes) and named in `warnings`.
 * Unacknowledged writes (`w=0`) are refused with INVALID_ARGUMENT (commits
 * are compare-and-set and need the server's answer), and so are the read
 * concerns `linearizable` and `snapshot` (see REFUSED_READ_CONCERNS).
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
  const refusal = REFUSED_READ_CONCERNS.get(level);
  if (refusal) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `the MongoDB store URI sets readConcernLevel=${level}, which agentd cannot use: ${refusal} ` +
        "(remove readConcernLevel from the URI: agentd reads with majority)",
    );
  }
  if (level === "local" || level === "available") {
    warnings.push(
      `the MongoDB store URI sets readConcernLevel=${level}: reads may return writes a failover later rolls back ` +
        "(agentd's default is majority; remove readConcernLevel from the URI)",
    );
  }
  const mode = options.readPreference?.mode ?? DEFAULT_READ_PREFERENCE;
  if (mode !== "primary") {
    warnings.push(
      `the MongoDB store URI sets readPreference=${mode}, which agentd overrides: every store read goes to the primary ` +
        "(a secondary that has not caught up would answer a snapshot just written as NOT_FOUND and make compare-and-set writes " +
        "retry on stale data); remove readPreference from the URI",
    );
  }
  return {
    db: {
      writeConcern: { w, journal, wtimeoutMS },
      readConcern: new ReadConcern(level as ReadConcernLevel),
      // Read-your-writes: commits, leases and updates are compare-and-set on what a read returned.
      readPreference: DEFAULT_READ_PREFERENCE,
    },
    warnings,
  };
}
