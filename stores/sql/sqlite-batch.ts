import { AgentError } from "../../src/errors/agent-error.js";
import type { SqlRow, SqlTransaction, SqlValue } from "./sql-engine.js";

/** One statement sent to the SQLite writer thread. */
export interface BatchStatement {
  sql: string;
  params?: readonly SqlValue[];
  /** True: reply with its rows; false: with the number of rows it changed. */
  rows?: boolean;
  /** True: a compare-and-set; changing no row fails it (and the message stops there) with {@link WriteConflict}. */
  guard?: boolean;
}

/** A message to the writer thread failed at statement `index` (the ones before it ran; none after it did). */
export class StatementFailure extends Error {
  constructor(
    readonly index: number,
    readonly error: unknown,
  ) {
    super(String((error as Error)?.message ?? error));
  }
}

/** Sends statements to the writer thread as one message; rejects with a {@link StatementFailure}. */
export type SendStatements = (stmts: BatchStatement[]) => Promise<unknown[]>;

/** A transaction of the batch: runs `fn` against a pipelined {@link SqlTransaction}. */
export interface BatchJob {
  fn: (tx: SqlTransaction) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const BEGIN: BatchStatement = { sql: "BEGIN IMMEDIATE" };
const COMMIT: BatchStatement = { sql: "COMMIT" };
const SAVEPOINT: BatchStatement = { sql: "SAVEPOINT agentd_tx" };
const RELEASE: BatchStatement = { sql: "RELEASE agentd_tx" };
const UNDO: BatchStatement[] = [{ sql: "ROLLBACK TO agentd_tx" }, RELEASE];

interface Pending {
  stmt: BatchStatement;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * One transaction's statements, pipelined: `write` queues a statement whose
 * result is not needed (it leaves with the next read or with the commit);
 * `query`/`run` issued in the same tick leave together in one message,
 * after the queued writes (so a read sees them). The first statement also
 * carries the savepoint that isolates this transaction inside its batch (and
 * the batch's BEGIN when it is the first one). Any failed statement fails
 * the whole transaction: it is rolled back to its savepoint even when `fn`
 * caught the error.
 */
class PipelinedTransaction implements SqlTransaction {
  opened = false;
  failure: { error: unknown } | undefined;
  private writes: BatchStatement[] = [];
  private pending: Pending[] = [];
  private scheduled = false;

  constructor(private readonly deliver: (stmts: BatchStatement[]) => Promise<unknown[]>) {}

  query(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
    return this.enqueue({ sql, params: params ?? [], rows: true }) as Promise<SqlRow[]>;
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.enqueue({ sql, params: params ?? [], rows: false }) as Promise<number>;
  }

  write(sql: string, params?: readonly SqlValue[]): void {
    this.writes.push({ sql, params: params ?? [], rows: false });
  }

  guard(sql: string, params?: readonly SqlValue[]): void {
    this.writes.push({ sql, params: params ?? [], rows: false, guard: true });
  }

  async announce(): Promise<void> {
    // SQLite's followers poll the database's change counter.
  }

  /** The statements still to send at the end (queued writes), with the savepoint's opening if needed. */
  takeRest(): BatchStatement[] {
    const rest = this.writes.splice(0);
    if (rest.length === 0) return [];
    const out = this.opened ? rest : [SAVEPOINT, ...rest];
    this.opened = true;
    return out;
  }

  private enqueue(stmt: BatchStatement): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.pending.push({ stmt, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const pending = this.pending.splice(0);
    const writes = this.writes.splice(0);
    const head = this.opened ? writes : [SAVEPOINT, ...writes];
    this.opened = true;
    try {
      const results = await this.deliver([...head, ...pending.map((p) => p.stmt)]);
      pending.forEach((p, i) => p.resolve(results[head.length + i]));
    } catch (err) {
      const error = err instanceof StatementFailure ? err.error : err;
      this.failure ??= { error };
      for (const p of pending) p.reject(error);
    }
  }
}

/** Whether the batch's BEGIN has been sent and its COMMIT not yet. */
interface Group {
  begun: boolean;
  done: boolean;
}

/**
 * Group commit on the SQLite writer thread with pipelined transactions: the
 * transactions queued while one commits share one BEGIN IMMEDIATE … COMMIT
 * (one fsync), each under its own savepoint, and each transaction costs as
 * few messages to the thread as its reads need — a transaction that only
 * queues writes (guards included) is one message: BEGIN (when the batch has
 * not begun), SAVEPOINT, its writes, RELEASE and, when no other transaction
 * waits, COMMIT; one that reads once is 2: its reads (with BEGIN and
 * SAVEPOINT in front), then the rest. A transaction that fails is
 * rolled back to its savepoint and leaves the others of its batch alone;
 * a failed BEGIN or COMMIT fails every transaction of the batch.
 */
export class SqliteBatcher {
  private readonly queue: BatchJob[] = [];
  private draining = false;

  constructor(
    private readonly send: SendStatements,
    private readonly maxBatch: number,
    private readonly commitFailed: (err: unknown) => AgentError,
  ) {}

  /** True while transactions are queued or running. */
  get busy(): boolean {
    return this.draining || this.queue.length > 0;
  }

  /** Queues `job`; it settles once its batch has committed (or it failed). */
  push(job: BatchJob): void {
    this.queue.push(job);
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) await this.runGroup();
    } finally {
      this.draining = false;
    }
  }

  private async runGroup(): Promise<void> {
    const group: Group = { begun: false, done: false };
    const landed: Array<{ job: BatchJob; value: unknown }> = [];
    const isLast = (): boolean => this.queue.length === 0 || landed.length + 1 >= this.maxBatch;
    let current: BatchJob | undefined;
    try {
      while (!group.done && this.queue.length > 0) {
        current = this.queue.shift()!;
        const outcome = await this.runJob(current, group, isLast);
        if (outcome.ok) landed.push({ job: current, value: outcome.value });
        else current.reject(outcome.error);
        current = undefined;
      }
      if (group.begun && !group.done) await this.sendInGroup(group, [COMMIT]);
    } catch (err) {
      if (err instanceof BeginFailed) {
        const waiting = [...landed.map((l) => l.job), ...(current ? [current] : [])];
        for (const job of [...waiting, ...this.queue.splice(0, this.maxBatch - waiting.length)]) job.reject(err.error);
        return;
      }
      if (group.begun) await this.send([{ sql: "ROLLBACK" }]).catch(() => {});
      const error = this.commitFailed(err instanceof StatementFailure ? err.error : err);
      for (const { job } of landed) job.reject(error);
      current?.reject(error);
      return;
    }
    for (const { job, value } of landed) job.resolve(value);
  }

  /** Sends `stmts`, with BEGIN in front when the group has not begun; results of `stmts` only. */
  private async sendInGroup(group: Group, stmts: BatchStatement[]): Promise<unknown[]> {
    const lead = group.begun ? [] : [BEGIN];
    try {
      const results = await this.send([...lead, ...stmts]);
      group.begun = true;
      if (stmts[stmts.length - 1] === COMMIT) group.done = true;
      return results.slice(lead.length);
    } catch (err) {
      if (!(err instanceof StatementFailure)) throw err;
      if (err.index < lead.length) throw new BeginFailed(err.error);
      group.begun = true;
      throw new StatementFailure(err.index - lead.length, err.error);
    }
  }

  /** Runs one transaction of the group; throws when the group as a whole failed (BEGIN, COMMIT, the thread). */
  private async runJob(
    job: BatchJob,
    group: Group,
    isLast: () => boolean,
  ): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> {
    const tx = new PipelinedTransaction((stmts) => this.sendInGroup(group, stmts));
    let value: unknown;
    let error: { error: unknown } | undefined;
    try {
      value = await job.fn(tx);
    } catch (err) {
      error = { error: err };
    }
    if (error === undefined && tx.failure === undefined) {
      const rest = tx.takeRest();
      const end = tx.opened ? [...rest, RELEASE] : rest;
      const last = isLast();
      const stmts = last && (group.begun || end.length > 0) ? [...end, COMMIT] : end;
      if (stmts.length === 0) return { ok: true, value };
      try {
        await this.sendInGroup(group, stmts);
        return { ok: true, value };
      } catch (err) {
        if (!(err instanceof StatementFailure)) throw err;
        if (stmts[err.index] === COMMIT) throw err;
        error = { error: err.error };
      }
    }
    const failed = tx.failure ?? error!;
    if (failed.error instanceof BeginFailed) throw failed.error;
    if (tx.opened) {
      const last = isLast();
      await this.sendInGroup(group, last ? [...UNDO, COMMIT] : UNDO);
    }
    return { ok: false, error: failed.error };
  }
}

/** The batch's BEGIN IMMEDIATE failed (e.g. the write lock stayed held): every transaction waiting fails with it. */
class BeginFailed extends Error {
  constructor(readonly error: unknown) {
    super(String((error as Error)?.message ?? error));
  }
}
