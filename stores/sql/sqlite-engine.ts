import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { AgentError } from "../../src/errors/agent-error.js";
import type { SqlChange, SqlEngine, SqlExecutor, SqlRow, SqlTransaction, SqlValue } from "./sql-engine.js";
import { sqliteError, type SqliteErrorInfo } from "./sqlite-errors.js";
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

interface Statement {
  sql: string;
  params?: readonly SqlValue[];
  rows?: boolean;
}

interface Job {
  fn: (tx: SqlTransaction) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Reply = { id: number; results: unknown[] } | { id: number; error: SqliteErrorInfo };

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
 * its savepoint and leaves the others of its batch alone. Reads run on the
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
  private readonly db: DatabaseSync;
  private readonly worker: Worker;
  private readonly started: Promise<void>;
  private readonly replies = new Map<number, { resolve: (r: unknown[]) => void; reject: (e: unknown) => void }>();
  private readonly statements = new Map<string, StatementSync>();
  private readonly queue: Job[] = [];
  private readonly pollMs: number;
  private readonly maxBatch: number;
  private nextId = 1;
  private draining = false;
  private closed = false;
  private poller: NodeJS.Timeout | undefined;
  private dataVersion = 0;

  constructor(
    private readonly path: string,
    options: SqliteEngineOptions = {},
  ) {
    this.description = path;
    this.pollMs = options.pollMs ?? 25;
    this.maxBatch = options.maxBatch ?? 64;
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const { DatabaseSync } = loadSqlite();
      this.db = new DatabaseSync(path);
      this.db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
      this.db.exec("PRAGMA journal_mode = WAL");
    } catch (err) {
      throw this.failure(err, "FAILED_PRECONDITION");
    }
    this.worker = new Worker(SQLITE_WRITER_SOURCE, {
      eval: true,
      workerData: { path, busyTimeoutMs, synchronous: options.synchronous ?? "FULL" },
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
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      void this.drain();
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
    while (this.draining || this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 5));
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
    if ("error" in reply) waiter.reject(sqliteError(reply.error, this.path));
    else waiter.resolve(reply.results);
  }

  private failAll(err: unknown): void {
    const error =
      err instanceof AgentError
        ? err
        : new AgentError("UNAVAILABLE", `sqlite store ${this.path}: ${String((err as Error)?.message ?? err)}`);
    for (const waiter of this.replies.values()) waiter.reject(error);
    this.replies.clear();
  }

  private async call(stmts: Statement[]): Promise<unknown[]> {
    await this.started;
    const id = this.nextId++;
    return new Promise<unknown[]>((resolve, reject) => {
      this.replies.set(id, { resolve, reject });
      if (this.replies.size === 1) this.worker.ref(); // a call in flight keeps the process alive
      this.worker.postMessage({ id, stmts });
    });
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) await this.runBatch();
    } finally {
      this.draining = false;
    }
  }

  /** One BEGIN … COMMIT holding as many queued transactions as arrive before it commits (up to maxBatch). */
  private async runBatch(): Promise<void> {
    try {
      await this.call([{ sql: "BEGIN IMMEDIATE" }]);
    } catch (err) {
      for (const job of this.queue.splice(0, this.maxBatch)) job.reject(err);
      return;
    }
    const landed: Array<{ job: Job; value: unknown }> = [];
    try {
      while (this.queue.length > 0 && landed.length < this.maxBatch) {
        const job = this.queue.shift()!;
        const outcome = await this.runJob(job);
        if (outcome.ok) landed.push({ job, value: outcome.value });
        else job.reject(outcome.error);
      }
      await this.call([{ sql: "COMMIT" }]);
    } catch (err) {
      await this.call([{ sql: "ROLLBACK" }]).catch(() => {});
      const error =
        err instanceof AgentError && err.status !== "INTERNAL"
          ? err
          : new AgentError("UNAVAILABLE", `sqlite store ${this.path}: the commit failed, nothing was written`);
      for (const { job } of landed) job.reject(error);
      return;
    }
    for (const { job, value } of landed) job.resolve(value);
  }

  /** Runs one transaction inside the batch under its own savepoint (sent with its first statement). */
  private async runJob(job: Job): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> {
    let opened = false;
    const send = async (stmt: Statement): Promise<unknown> => {
      const stmts = opened ? [stmt] : [{ sql: "SAVEPOINT agentd_tx" }, stmt];
      opened = true;
      const results = await this.call(stmts);
      return results[results.length - 1];
    };
    const tx: SqlTransaction = {
      query: async (sql, params) => (await send({ sql, params: params ?? [], rows: true })) as SqlRow[],
      run: async (sql, params) => (await send({ sql, params: params ?? [], rows: false })) as number,
      announce: async () => {},
    };
    try {
      const value = await job.fn(tx);
      if (opened) await this.call([{ sql: "RELEASE agentd_tx" }]);
      return { ok: true, value };
    } catch (error) {
      if (opened) await this.call([{ sql: "ROLLBACK TO agentd_tx" }, { sql: "RELEASE agentd_tx" }]);
      return { ok: false, error };
    }
  }
}
