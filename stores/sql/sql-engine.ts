/**
 * The small surface the SQL store needs from a database engine (SQLite or
 * PostgreSQL): statements with `?` placeholders, transactions that are
 * durable when they resolve, and a feed of changes other processes made.
 */

/** A value a statement binds: text, a number (integers up to 2^53) or NULL. */
export type SqlValue = string | number | null;

/** One result row, by column name. */
export type SqlRow = Record<string, unknown>;

/** Which engine a statement runs on (the few statements that differ pick by it). */
export type SqlDialect = "sqlite" | "postgres";

/** Runs statements written with `?` placeholders (PostgreSQL's engine numbers them). */
export interface SqlExecutor {
  /** Runs a statement and resolves to its rows. */
  query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  /** Runs a statement and resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
}

/**
 * A change another process (or this one) made that followers may care
 * about: a record's status, appended chunks, or `unknown` (the follower
 * lost track, e.g. its notification connection dropped, or SQLite's change
 * counter moved: it re-reads everything it follows).
 */
export type SqlChange =
  | { kind: "status"; snapshotId: string; status: string; version: number }
  | { kind: "chunks"; sessionId: string; snapshotId: string; lastSequence: number }
  | { kind: "unknown" };

/** The statements of one transaction, plus change announcements delivered when it commits. */
export interface SqlTransaction extends SqlExecutor {
  /**
   * Queues a statement whose result the transaction does not need: it runs
   * before the transaction's next `query`/`run` (which so sees it) or at its
   * end, before COMMIT. If it fails, the whole transaction fails with its
   * error and nothing of it lands. SQLite sends the queued statements to its
   * writer thread with the next message instead of one message each.
   */
  write(sql: string, params?: readonly SqlValue[]): void;
  /**
   * Queues a compare-and-set like {@link write}: a statement that must change
   * at least one row. When it changes none, the statements queued after it
   * do not run, the transaction is rolled back and `transaction()` rejects
   * with {@link WriteConflict} (so a transaction can send its condition and
   * its writes together, without waiting for the condition's answer).
   */
  guard(sql: string, params?: readonly SqlValue[]): void;
  /**
   * Tells the other processes sharing the database about `change` once the
   * transaction commits (PostgreSQL: NOTIFY in the transaction; SQLite: a
   * no-op, its followers poll the database's change counter).
   */
  announce(change: SqlChange): Promise<void>;
}

/**
 * A {@link SqlTransaction.guard} statement changed no row: the transaction
 * was rolled back and nothing of it landed. Not an AgentError: the caller
 * decides what a failed condition means (the SQL store: a head that moved).
 */
export class WriteConflict extends Error {
  constructor(readonly sql: string) {
    super(`the transaction's condition matched no row: ${sql.split(/\s+/).slice(0, 3).join(" ")}`);
    this.name = "WriteConflict";
  }
}

/**
 * A database engine. Guarantees: `transaction` runs `fn` in one transaction
 * (all of its statements land, or none) and resolves only once that
 * transaction is durable (SQLite: synchronous=FULL, fsynced before
 * resolving; PostgreSQL: COMMIT acknowledged); when `fn` throws, nothing of
 * it lands and the error is rethrown. Driver errors come out as AgentErrors:
 * ALREADY_EXISTS for a unique-key violation, UNAVAILABLE when the database
 * cannot be reached or stays locked, INTERNAL otherwise.
 */
export interface SqlEngine {
  readonly dialect: SqlDialect;
  /** Where the data lives, safe to log (a file path, or the URI without its password). */
  readonly description: string;
  /** Reads outside any transaction (each statement sees the latest committed data). */
  readonly reader: SqlExecutor;
  /** Runs `fn` in one transaction (see the interface's guarantees). */
  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T>;
  /**
   * Starts (a listener) or stops (undefined) the feed of changes made by
   * other processes. SQLite polls its change counter only while a listener
   * is set; PostgreSQL keeps one LISTEN connection.
   */
  follow(listener: ((change: SqlChange) => void) | undefined): void;
  /** True once changes made from now on are sure to reach the listener (PostgreSQL: LISTEN is active). */
  readonly following: boolean;
  /** Optional: prepares the database before migrations run (PostgreSQL: creates the schema). */
  prepare?(): Promise<void>;
  /** Resolves when the database answers a trivial query; UNAVAILABLE otherwise. */
  ping(): Promise<void>;
  /** Releases connections, threads and timers. Idempotent. */
  close(): Promise<void>;
}

/** Replaces each `?` of `sql` with `$1`, `$2`, … (PostgreSQL's placeholders). The store's SQL has no `?` in literals. */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
