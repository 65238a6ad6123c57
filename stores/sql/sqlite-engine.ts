import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  type SqlChange,
  type SqlEngine,
  type SqlExecutor,
  type SqlRow,
  type SqlTransaction,
  type SqlValue,
  WriteConflict,
} from "./sql-engine.js";
import { type BatchStatement, SqliteBatcher, StatementFailure } from "./sqlite-batch.js";
import { sqliteError, type SqliteErrorInfo } from "./sqlite-errors.js";
import { switchToWal } from "./sqlite-wal.js";
import { SQLITE_WRITER_SOURCE } from "./sqlite-writer-source.js";

/** Options of {@link SqliteEngine}. */
export interface SqliteEngineOptions {
  /** How long a writer waits for another process's write lock before UNAVAILABLE (ms, default 10 000). */
  busyTimeoutMs?: number;
  /**
   * FULL (default): a transaction is fsynced before it resolves. NORMAL: WAL
   * commits are not fsynced one by one (an OS crash may lose the last ones;
   * a process crash loses nothing). See docs/stores.md.
   */
  synchronous?: "FULL" | "NORMAL";
  /** How often the change counter is polled while changes are followed (ms, default 25). */
  pollMs?: number;
  /** At most this many transactions share one commit (and one fsync) (default 64). */
  maxBatch?: number;
}

type Reply =
  | { id: number; results: unknown[] }
  | { id: number; error: SqliteErrorInfo; index?: number }
  | { id: number; conflict: true; index: number };

/** Loads `node:sqlite` without its one-time ExperimentalWarning (see docs/stores.md on the choice). */
function loadSqlite(): typeof import("node:sqlite") {
  const original = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning?.message;
    if (typeof text === "string" && text.includes("SQLite is an experimental feature")) return;
    return (original as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return createRequire(import.meta.url)("node:sqlite") as typeof import("node:sqlite");
  } finally {
    process.emitWarning = original;
  }
}

/**
 * SQLite through Node's built-in `node:sqlite`, without blocking the event
 * loop on writes: every transaction runs on one writer thread with its own
 * connection, and the transactions queued while one commits share the next
 * commit (BEGIN IMMEDIATE, one SAVEPOINT per transaction, one COMMIT and so
 * one fsync for the batch); each one resolves only after that COMMIT
 * (synchronous=FULL by default). A transaction that throws is rolled back to
 * its savepoint and leaves the others of its batch alone. Statements are
 * pipelined (see `SqliteBatcher`): a transaction's queued writes and its
 * reads issued together share one message to the thread, and a guarded
 * compare-and-set leaves with the writes it guards, so a turn's commit is
 * one round trip (two when it must read first). Reads run on the
 * calling thread on a second connection (WAL: readers never wait for the
 * writer; each read is a short indexed lookup). Other processes sharing the
 * file take turns through SQLite's write lock (busy timeout); their commits
 * are noticed by polling `PRAGMA data_version` while changes are followed.
 */
export class SqliteEngine implements SqlEngine {
  readonly dialect = "sqlite" as const;
  readonly description: string;
  readonly reader: SqlExecutor;
  readonly following = true;
  /** The writer connection's `synchronous` setting (FULL: fsynced before a commit resolves). */
  readonly synchronous: "FULL" | "NORMAL";
  private readonly db: DatabaseSync;
  private readonly worker: Worker;
  private readonly started: Promise<void>;
  private readonly replies = new Map<
    number,
    { resolve: (r: unknown[]) => void; reject: (e: unknown) => void; stmts?: BatchStatement[] }
  >();
  private readonly statements = new Map<string, StatementSync>();
  private readonly batcher: SqliteBatcher;
  private readonly pollMs: number;
  private nextId = 1;
  private posted = 0;
  private closed = false;
  private poller: NodeJS.Timeout | undefined;
  private dataVersion = 0;

  constructor(
    private readonly path: string,
    options: SqliteEngineOptions = {},
  ) {
    this.description = path;
    this.pollMs = options.pollMs ?? 25;
    this.synchronous = options.synchronous ?? "FULL";
    this.batcher = new SqliteBatcher(
      (stmts) => this.call(stmts),
      options.maxBatch ?? 64,
      (err) =>
        err instanceof AgentError && err.status !== "INTERNAL"
          ? err
          : new AgentError("UNAVAILABLE", `sqlite store ${path}: the commit failed, nothing was written`),
    );
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const { DatabaseSync } = loadSqlite();
      this.db = new DatabaseSync(path);
      this.db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
      switchToWal(this.db, busyTimeoutMs);
    } catch (err) {
      throw this.failure(err, "FAILED_PRECONDITION");
    }
    this.worker = new Worker(SQLITE_WRITER_SOURCE, {
      eval: true,
      workerData: { path, busyTimeoutMs, synchronous: this.synchronous },
    });
    this.worker.unref();
    this.started = new Promise<void>((resolve, reject) => this.replies.set(0, { resolve: () => resolve(), reject }));
    this.started.catch(() => {});
    this.worker.on("message", (reply: Reply) => this.onReply(reply));
    this.worker.on("error", (err) => this.failAll(err));
    this.worker.on("exit", () =>
      this.failAll(new AgentError("UNAVAILABLE", `sqlite store ${path}: its writer stopped`)),
    );
    this.reader = {
      query: async (sql, params) => this.readSync(sql, params, true) as SqlRow[],
      run: async (sql, params) => this.readSync(sql, params, false) as number,
    };
  }

  /** Runs `fn` in one transaction on the writer thread, batched with the others queued meanwhile; resolves after the durable COMMIT. */
  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new AgentError("UNAVAILABLE", `sqlite store ${this.path} is closed`));
    return new Promise<T>((resolve, reject) => {
      this.batcher.push({ fn, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  /** Polls `PRAGMA data_version` every `pollMs` while `listener` is set; a change is reported as `unknown`. */
  follow(listener: ((change: SqlChange) => void) | undefined): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    if (!listener || this.closed) return;
    this.dataVersion = this.readDataVersion();
    this.poller = setInterval(() => {
      let version: number;
      try {
        version = this.readDataVersion();
      } catch {
        return; // a transient lock: the next poll tries again
      }
      if (version === this.dataVersion) return;
      this.dataVersion = version;
      listener({ kind: "unknown" });
    }, this.pollMs);
    this.poller.unref();
  }

  /** Messages posted to the writer thread so far (each a round trip; for tests and diagnostics). */
  get messages(): number {
    return this.posted;
  }

  /** Resolves when the writer thread is up and the file reads. */
  async ping(): Promise<void> {
    await this.started;
    this.readSync("SELECT 1", [], true);
  }

  /** Stops polling, ends the writer thread (after the transactions already queued) and closes the reader. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.follow(undefined);
    while (this.batcher.busy) await new Promise((resolve) => setTimeout(resolve, 5));
    const exited = new Promise<void>((resolve) => this.worker.once("exit", () => resolve()));
    this.worker.postMessage("close");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2_000))]);
    try {
      this.db.close();
    } catch {
      // already closed
    }
  }

  private readDataVersion(): number {
    return Number((this.prepared("PRAGMA data_version").get() as { data_version: number }).data_version);
  }

  private prepared(sql: string): StatementSync {
    let stmt = this.statements.get(sql);
    if (!stmt) this.statements.set(sql, (stmt = this.db.prepare(sql)));
    return stmt;
  }

  private readSync(sql: string, params: readonly SqlValue[] | undefined, rows: boolean): SqlRow[] | number {
    if (this.closed) throw new AgentError("UNAVAILABLE", `sqlite store ${this.path} is closed`);
    try {
      const stmt = this.prepared(sql);
      if (rows) return stmt.all(...(params ?? [])) as SqlRow[];
      return Number(stmt.run(...(params ?? [])).changes);
    } catch (err) {
      throw this.failure(err);
    }
  }

  private failure(err: unknown, fallback?: "FAILED_PRECONDITION"): AgentError {
    if (err instanceof AgentError) return err;
    const info = err as SqliteErrorInfo;
    const mapped = sqliteError({ message: String(info?.message ?? err), errcode: info?.errcode }, this.path);
    return fallback && mapped.status === "INTERNAL" ? new AgentError(fallback, mapped.message) : mapped;
  }

  private onReply(reply: Reply): void {
    const waiter = this.replies.get(reply.id);
    if (!waiter) return;
    this.replies.delete(reply.id);
    if (this.replies.size === 0) this.worker.unref();
    if ("results" in reply) waiter.resolve(reply.results);
    else if ("conflict" in reply)
      waiter.reject(new StatementFailure(reply.index, new WriteConflict(waiter.stmts?.[reply.index]?.sql ?? "guard")));
    else if (reply.id === 0) waiter.reject(sqliteError(reply.error, this.path));
    else waiter.reject(new StatementFailure(reply.index ?? 0, sqliteError(reply.error, this.path)));
  }

  private failAll(err: unknown): void {
    const error =
      err instanceof AgentError
        ? err
        : new AgentError("UNAVAILABLE", `sqlite store ${this.path}: ${String((err as Error)?.message ?? err)}`);
    for (const waiter of this.replies.values()) waiter.reject(error);
    this.replies.clear();
  }

  private async call(stmts: BatchStatement[]): Promise<unknown[]> {
    await this.started;
    const id = this.nextId++;
    return new Promise<unknown[]>((resolve, reject) => {
      this.replies.set(id, { resolve, reject, stmts });
      if (this.replies.size === 1) this.worker.ref(); // a call in flight keeps the process alive
      this.posted++;
      this.worker.postMessage({ id, stmts });
    });
  }
}
