import pg from "pg";
import { AgentError, type StatusName } from "../../src/errors/agent-error.js";
import {
  numberPlaceholders,
  type SqlChange,
  type SqlEngine,
  type SqlExecutor,
  type SqlRow,
  type SqlTransaction,
  WriteConflict,
  type SqlValue,
} from "./sql-engine.js";

/** Options of {@link PostgresEngine}. */
export interface PostgresEngineOptions {
  /** The `pg` connection string (without agentd's `schema` parameter). */
  connectionString: string;
  /** The schema holding the tables (created if missing); also names the notification channel. */
  schema: string;
  /** How the database is named in errors (the URI without its password). */
  description: string;
  /** Pooled connections (default 10), besides the one LISTEN connection. */
  poolSize?: number;
}

/** BIGINT columns come back as numbers (every stored integer is below 2^53). */
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * SQLSTATEs of a value PostgreSQL's text cannot hold (a NUL character,
 * U+0000, or one the database encoding lacks): the value's fault, not the
 * store's.
 */
const UNSTORABLE_TEXT = new Set(["22021", "22P05"]);

/** The status of a PostgreSQL error: SQLSTATE classes and codes that mean "try again later" rather than a bug, and the value faults. */
function statusOf(err: { code?: string }): StatusName {
  const code = err.code ?? "";
  if (code === "23505") return "ALREADY_EXISTS";
  if (UNSTORABLE_TEXT.has(code)) return "INVALID_ARGUMENT";
  if (code === "53100" || code === "54000") return "RESOURCE_EXHAUSTED";
  if (/^(08|53|57P|40)/.test(code) || /^E[A-Z]+$/.test(code)) return "UNAVAILABLE";
  return "INTERNAL";
}

/** Transactions retried when PostgreSQL picks them as a deadlock victim or serialization loser. */
const RETRIED = new Set(["40P01", "40001"]);

/**
 * PostgreSQL through the `pg` driver: a bounded pool for reads and
 * transactions (BEGIN … COMMIT on one pooled connection, retried on a
 * deadlock), and one LISTEN connection on the channel `agentd_<schema>` that
 * delivers the changes other instances announce (`pg_notify` inside their
 * transactions, so a notification leaves only with its commit). When that
 * connection drops it is reopened with backoff; each time LISTEN is up
 * (the first time too) followers are told `unknown`, so they re-read what
 * they follow and miss nothing committed before it was.
 */
export class PostgresEngine implements SqlEngine {
  readonly dialect = "postgres" as const;
  readonly description: string;
  readonly reader: SqlExecutor;
  private readonly pool: pg.Pool;
  private readonly channel: string;
  private readonly config: pg.ClientConfig;
  private listenerClient: pg.Client | undefined;
  private pingClient: Promise<pg.Client> | undefined;
  private listener: ((change: SqlChange) => void) | undefined;
  private listening = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private backoffMs = 100;
  private closed = false;

  constructor(private readonly options: PostgresEngineOptions) {
    this.description = options.description;
    this.channel = `agentd_${options.schema}`;
    this.config = {
      connectionString: options.connectionString,
      options: `-c search_path=${options.schema}`,
      types: TYPES,
    };
    this.pool = new pg.Pool({ ...this.config, max: options.poolSize ?? 10 });
    this.pool.on("error", () => {}); // an idle connection dropped: the next checkout reconnects
    this.reader = {
      query: async (sql, params) =>
        (await this.pooled((c) => c.query(numberPlaceholders(sql), params as unknown[]))).rows as SqlRow[],
      run: async (sql, params) =>
        (await this.pooled((c) => c.query(numberPlaceholders(sql), params as unknown[]))).rowCount ?? 0,
    };
  }

  /** Creates the schema when missing (before migrations, which run inside it). */
  async prepare(): Promise<void> {
    if (this.options.schema === "public") return;
    await this.pooled((c) => c.query(`CREATE SCHEMA IF NOT EXISTS ${this.options.schema}`)).catch((err: unknown) => {
      if ((err as AgentError).status === "ALREADY_EXISTS") return; // a concurrent CREATE SCHEMA won
      throw err;
    });
  }

  /** BEGIN, `fn`, COMMIT on one pooled connection; ROLLBACK when `fn` throws; retried up to 3 times on a deadlock. */
  async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pooled(async (client) => {
          const writes: Array<{ sql: string; params: readonly SqlValue[]; guard?: boolean }> = [];
          const flush = async (): Promise<void> => {
            for (const w of writes.splice(0)) {
              const result = await client.query(numberPlaceholders(w.sql), w.params as unknown[]);
              if (w.guard && !result.rowCount) throw new WriteConflict(w.sql);
            }
          };
          const tx: SqlTransaction = {
            query: async (sql, params) => {
              await flush();
              return (await client.query(numberPlaceholders(sql), params as unknown[])).rows as SqlRow[];
            },
            run: async (sql, params) => {
              await flush();
              return (await client.query(numberPlaceholders(sql), params as unknown[])).rowCount ?? 0;
            },
            write: (sql, params) => void writes.push({ sql, params: params ?? [] }),
            guard: (sql, params) => void writes.push({ sql, params: params ?? [], guard: true }),
            announce: async (change) => {
              await client.query("SELECT pg_notify($1, $2)", [this.channel, JSON.stringify(change)]);
            },
          };
          await client.query("BEGIN");
          try {
            const value = await fn(tx);
            await flush();
            await client.query("COMMIT");
            return value;
          } catch (err) {
            await client.query("ROLLBACK").catch(() => {});
            throw err;
          }
        });
      } catch (err) {
        const code = (err as { details?: { sqlState?: string } }).details?.sqlState;
        if (attempt < 3 && code && RETRIED.has(code)) continue;
        throw err;
      }
    }
  }

  /** Starts (LISTEN on a dedicated connection) or stops following other instances' changes. */
  follow(listener: ((change: SqlChange) => void) | undefined): void {
    this.listener = listener;
    if (listener && !this.listenerClient && !this.reconnectTimer && !this.closed) void this.listen();
    if (!listener) this.stopListening();
  }

  /** True while the LISTEN connection is up. */
  get following(): boolean {
    return this.listening;
  }

  /**
   * One `SELECT 1` on a connection of its own (opened at the first ping,
   * reopened after it fails), not through the pool: under load every pooled
   * connection is busy and a ping queued behind the transactions would time
   * out the server's health probe although the database answers.
   */
  async ping(): Promise<void> {
    if (this.closed) throw new AgentError("UNAVAILABLE", `store ${this.description} is closed`);
    try {
      this.pingClient ??= this.connectPingClient();
      await (await this.pingClient).query("SELECT 1");
    } catch (err) {
      const client = this.pingClient;
      this.pingClient = undefined;
      void client?.then((c) => c.end()).catch(() => {});
      throw this.failure(err);
    }
  }

  private async connectPingClient(): Promise<pg.Client> {
    const client = new pg.Client(this.config);
    client.on("error", () => {}); // the next ping's query fails and reopens it
    await client.connect();
    return client;
  }

  /** Closes the LISTEN connection and the pool. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopListening();
    const ping = this.pingClient;
    this.pingClient = undefined;
    await ping?.then((c) => c.end()).catch(() => {});
    await this.pool.end().catch(() => {});
  }

  private stopListening(): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const client = this.listenerClient;
    this.listenerClient = undefined;
    this.listening = false;
    if (client) void client.end().catch(() => {});
  }

  private async listen(): Promise<void> {
    const client = new pg.Client(this.config);
    this.listenerClient = client;
    client.on("notification", (message) => {
      if (message.channel !== this.channel || !message.payload) return;
      try {
        this.listener?.(JSON.parse(message.payload) as SqlChange);
      } catch {
        this.listener?.({ kind: "unknown" });
      }
    });
    const lost = (): void => {
      if (this.listenerClient !== client) return;
      this.listenerClient = undefined;
      this.listening = false;
      client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on("error", lost);
    client.on("end", lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
      if (this.listenerClient !== client) return;
      this.listening = true;
      this.backoffMs = 100;
      // Followers read what they follow before LISTEN was up (at their start, or before a
      // reconnect): a change committed meanwhile sent its notification to nobody, so re-read.
      this.listener?.({ kind: "unknown" });
    } catch {
      lost();
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || !this.listener || this.reconnectTimer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 2_000);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.listener && !this.closed) void this.listen();
    }, delay);
    this.reconnectTimer.unref();
  }

  private async pooled<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.closed) throw new AgentError("UNAVAILABLE", `store ${this.description} is closed`);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.failure(err);
    }
    try {
      return await fn(client);
    } catch (err) {
      throw this.failure(err);
    } finally {
      client.release();
    }
  }

  private failure(err: unknown): AgentError | WriteConflict {
    if (err instanceof AgentError || err instanceof WriteConflict) return err;
    const e = err as { code?: string; message?: string };
    const status = statusOf(e);
    const hint =
      status === "INVALID_ARGUMENT"
        ? ": PostgreSQL cannot store this text (it holds a NUL character, U+0000, or one the database encoding lacks)"
        : "";
    return new AgentError(status, `postgres store ${this.description}: ${e.message ?? String(err)}${hint}`, {
      details: e.code ? { sqlState: e.code } : {},
    });
  }
}
