import { AgentError } from "../../src/errors/agent-error.js";
import type { SqlDialect, SqlEngine } from "./sql-engine.js";

/** One schema step: its number and its statements (in a dialect's words where they differ). */
interface Migration {
  version: number;
  statements(dialect: SqlDialect): string[];
}

/**
 * The schema, as versioned steps. A step is never edited once released: a
 * change is a new step. Keys are compared byte-wise on both engines
 * (PostgreSQL columns use the "C" collation), matching the stores' plain
 * code-unit ordering of session and snapshot IDs.
 */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    statements: (dialect) => {
      const key = dialect === "postgres" ? `TEXT COLLATE "C"` : "TEXT";
      const int = dialect === "postgres" ? "BIGINT" : "INTEGER";
      return [
        `CREATE TABLE heads (
          session_id ${key} PRIMARY KEY,
          owner ${key} NOT NULL,
          agent ${key} NOT NULL,
          version ${int} NOT NULL,
          updated_at ${int} NOT NULL,
          expires_at ${int},
          lease_expires_at ${int},
          head TEXT NOT NULL
        )`,
        `CREATE INDEX heads_by_owner ON heads (owner, updated_at DESC, session_id DESC)`,
        `CREATE INDEX heads_by_expiry ON heads (expires_at) WHERE expires_at IS NOT NULL`,
        `CREATE INDEX heads_by_lease ON heads (lease_expires_at, session_id) WHERE lease_expires_at IS NOT NULL`,
        `CREATE TABLE records (
          snapshot_id ${key} PRIMARY KEY,
          session_id ${key} NOT NULL,
          created_at ${int} NOT NULL,
          turn_index ${int} NOT NULL,
          status TEXT NOT NULL,
          version ${int} NOT NULL,
          meta TEXT NOT NULL,
          checkpoint TEXT,
          delta TEXT
        )`,
        `CREATE INDEX records_by_session ON records (session_id, created_at DESC, snapshot_id DESC)`,
        `CREATE INDEX records_by_turn ON records (session_id, turn_index)`,
        `CREATE TABLE requests (
          session_id ${key} NOT NULL,
          request_id ${key} NOT NULL,
          snapshot_id ${key} NOT NULL,
          committed_at ${int} NOT NULL,
          position ${int} NOT NULL,
          PRIMARY KEY (session_id, request_id)
        )`,
        `CREATE TABLE chunk_logs (
          session_id ${key} NOT NULL,
          snapshot_id ${key} NOT NULL,
          keep_until ${int} NOT NULL,
          last_sequence ${int} NOT NULL,
          PRIMARY KEY (session_id, snapshot_id)
        )`,
        `CREATE INDEX chunk_logs_by_keep ON chunk_logs (keep_until)`,
        `CREATE TABLE chunks (
          session_id ${key} NOT NULL,
          snapshot_id ${key} NOT NULL,
          sequence ${int} NOT NULL,
          chunk TEXT NOT NULL,
          PRIMARY KEY (session_id, snapshot_id, sequence)
        )`,
        `CREATE TABLE webhooks (
          id ${key} PRIMARY KEY,
          tenant ${key} NOT NULL,
          created_at ${int} NOT NULL,
          state TEXT NOT NULL,
          next_attempt_at ${int} NOT NULL,
          lease_instance TEXT,
          lease_until ${int},
          url TEXT NOT NULL,
          event TEXT NOT NULL
        )`,
        `CREATE INDEX webhooks_due ON webhooks (state, next_attempt_at, created_at)`,
        `CREATE INDEX webhooks_by_tenant ON webhooks (tenant, created_at DESC, id DESC)`,
      ];
    },
  },
  {
    // The tool calls of turns not yet committed, by session and request ID (see `ToolResultJournal`).
    version: 2,
    statements: (dialect) => {
      const key = dialect === "postgres" ? `TEXT COLLATE "C"` : "TEXT";
      const int = dialect === "postgres" ? "BIGINT" : "INTEGER";
      return [
        `CREATE TABLE tool_calls (
          session_id ${key} NOT NULL,
          request_id ${key} NOT NULL,
          call_key ${key} NOT NULL,
          tool TEXT NOT NULL,
          started_at ${int} NOT NULL,
          ended_at ${int},
          output TEXT,
          recorded_at ${int} NOT NULL,
          PRIMARY KEY (session_id, request_id, call_key)
        )`,
        `CREATE INDEX tool_calls_by_age ON tool_calls (recorded_at)`,
      ];
    },
  },
  {
    // Chunk logs fenced by run (sql-chunk-fence.ts): the latest run that claimed a log, and the run of each chunk.
    version: 3,
    statements: (dialect) => {
      const int = dialect === "postgres" ? "BIGINT" : "INTEGER";
      return [
        `ALTER TABLE chunk_logs ADD COLUMN run ${int} NOT NULL DEFAULT 0`,
        `ALTER TABLE chunks ADD COLUMN run ${int}`,
      ];
    },
  },
];

/** The newest schema version this agentd writes. */
export const SQL_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * Brings the database's schema to {@link SQL_SCHEMA_VERSION}, one step per
 * transaction, recording each in `agentd_schema`; safe when several
 * processes open the same database at once (PostgreSQL: an advisory lock;
 * SQLite: the write lock). Resolves to the version found before. A database
 * written by a newer agentd fails with FAILED_PRECONDITION and is left
 * alone.
 */
export async function migrateSchema(engine: SqlEngine): Promise<number> {
  const int = engine.dialect === "postgres" ? "BIGINT" : "INTEGER";
  let found: number | undefined;
  for (;;) {
    const step = await engine.transaction(async (tx) => {
      if (engine.dialect === "postgres") await tx.query("SELECT pg_advisory_xact_lock(7230461)");
      await tx.run(`CREATE TABLE IF NOT EXISTS agentd_schema (version ${int} PRIMARY KEY, applied_at ${int} NOT NULL)`);
      const rows = await tx.query("SELECT MAX(version) AS version FROM agentd_schema");
      const current = Number(rows[0]?.version ?? 0);
      if (current > SQL_SCHEMA_VERSION) {
        throw new AgentError(
          "FAILED_PRECONDITION",
          `store ${engine.description} has schema version ${current}, newer than this agentd's ${SQL_SCHEMA_VERSION}: upgrade agentd`,
          { details: { foundSchema: current } },
        );
      }
      const next = MIGRATIONS.find((m) => m.version === current + 1);
      if (!next) return { current, applied: false };
      for (const sql of next.statements(engine.dialect)) await tx.run(sql);
      await tx.run("INSERT INTO agentd_schema (version, applied_at) VALUES (?, ?)", [next.version, Date.now()]);
      return { current, applied: true };
    });
    found ??= step.current;
    if (!step.applied) return found;
  }
}
