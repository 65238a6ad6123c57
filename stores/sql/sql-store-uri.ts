import { resolve } from "node:path";
import { AgentError } from "../../src/errors/agent-error.js";
import { redactStoreUri } from "../redact-uri.js";
import { SqlSessionStore } from "./sql-store.js";

/** True for the URIs {@link openSqlStore} opens: `sqlite:…`, `postgres://…`, `postgresql://…`. */
export function isSqlStoreUri(uri: string): boolean {
  const trimmed = uri.trim();
  return trimmed.startsWith("sqlite:") || trimmed.startsWith("postgres://") || trimmed.startsWith("postgresql://");
}

/** The `synchronous` values an `sqlite:` URI accepts (lower case), as SQLite's pragma names them. */
const SYNCHRONOUS = { full: "FULL", normal: "NORMAL" } as const;

/**
 * The database file an `sqlite:` URI names and its options:
 * `sqlite:./agentd.db` and `sqlite:agentd.db` (relative to the current
 * directory), `sqlite:/abs/x.db`, `sqlite:///abs/x.db`, optionally followed
 * by `?synchronous=full` (default: a commit is fsynced before it is
 * acknowledged) or `?synchronous=normal` (see docs/stores.md).
 * INVALID_ARGUMENT without a path, for an unknown parameter or value.
 */
export function sqliteConfigOf(uri: string): { path: string; synchronous: "FULL" | "NORMAL" } {
  const trimmed = uri.trim();
  const mark = trimmed.indexOf("?");
  const bare = mark < 0 ? trimmed : trimmed.slice(0, mark);
  const query = new URLSearchParams(mark < 0 ? "" : trimmed.slice(mark + 1));
  let synchronous: "FULL" | "NORMAL" = "FULL";
  for (const [name, value] of query) {
    if (name !== "synchronous")
      throw new AgentError(
        "INVALID_ARGUMENT",
        `store URI "${redactStoreUri(uri)}": unknown parameter "${name.slice(0, 64)}" (an sqlite: URI takes only synchronous=full|normal)`,
      );
    const chosen = SYNCHRONOUS[value.toLowerCase() as keyof typeof SYNCHRONOUS];
    if (!chosen)
      throw new AgentError(
        "INVALID_ARGUMENT",
        `store URI "${redactStoreUri(uri)}": synchronous must be full or normal, not "${value.slice(0, 64)}"`,
      );
    synchronous = chosen;
  }
  return { path: sqlitePathOf(bare), synchronous };
}

/**
 * The database file an `sqlite:` URI without parameters names: `sqlite:./agentd.db` and
 * `sqlite:agentd.db` (relative to the current directory), `sqlite:/abs/x.db`,
 * `sqlite:///abs/x.db`. INVALID_ARGUMENT without a path.
 */
export function sqlitePathOf(uri: string): string {
  const trimmed = uri.trim();
  let path = trimmed.slice("sqlite:".length);
  if (path.startsWith("//")) path = decodeURIComponent(new URL(trimmed).pathname);
  if (path.length === 0 || path.endsWith("/"))
    throw new AgentError(
      "INVALID_ARGUMENT",
      `store URI "${redactStoreUri(uri)}" names no database file: use e.g. sqlite:./.agentd/agentd.db`,
    );
  return resolve(process.cwd(), path);
}

/**
 * The PostgreSQL connection string without agentd's own `schema` parameter,
 * and that schema (default `public`): lower-case letters, digits and `_`,
 * starting with a letter or `_`, at most 48 characters; INVALID_ARGUMENT
 * otherwise.
 */
export function postgresConfigOf(uri: string): { connectionString: string; schema: string } {
  let url: URL;
  try {
    url = new URL(uri.trim());
  } catch {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `invalid PostgreSQL URI "${redactStoreUri(uri)}": use postgres://user:password@host:5432/database`,
    );
  }
  const schema = url.searchParams.get("schema") ?? "public";
  if (!/^[a-z_][a-z0-9_]{0,47}$/.test(schema))
    throw new AgentError(
      "INVALID_ARGUMENT",
      `invalid schema "${schema.slice(0, 64)}" in store URI "${redactStoreUri(uri)}": use lower-case letters, digits and _ (at most 48)`,
    );
  url.searchParams.delete("schema");
  return { connectionString: url.toString(), schema };
}

/**
 * Opens the SQL store a URI names: `sqlite:<file>[?synchronous=normal]` on
 * `node:sqlite` (see `SqliteEngine`) or `postgres://…` / `postgresql://…` on the `pg` driver
 * (see `PostgresEngine`; `?schema=<name>` keeps the tables in that schema,
 * created if missing). The schema is migrated at the store's first use
 * (`ready`).
 */
export async function openSqlStore(uri: string): Promise<SqlSessionStore> {
  const trimmed = uri.trim();
  if (trimmed.startsWith("sqlite:")) {
    const { SqliteEngine } = await import("./sqlite-engine.js");
    const { path, synchronous } = sqliteConfigOf(trimmed);
    return new SqlSessionStore(new SqliteEngine(path, { synchronous }));
  }
  if (trimmed.startsWith("postgres://") || trimmed.startsWith("postgresql://")) {
    const { PostgresEngine } = await loadPostgresEngine();
    const { connectionString, schema } = postgresConfigOf(trimmed);
    return new SqlSessionStore(new PostgresEngine({ connectionString, schema, description: redactStoreUri(trimmed) }));
  }
  throw new AgentError("INVALID_ARGUMENT", `"${redactStoreUri(uri)}" is not an SQL store URI (sqlite: or postgres://)`);
}

/** The PostgreSQL engine module; FAILED_PRECONDITION naming the missing `pg` package (an optional peer dependency). */
async function loadPostgresEngine(): Promise<typeof import("./postgres-engine.js")> {
  try {
    return await import("./postgres-engine.js");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND" && String(error).includes("'pg'"))
      throw new AgentError(
        "FAILED_PRECONDITION",
        "a postgres:// store needs the pg package, which is not installed: run npm install pg@8 in your project",
      );
    throw error;
  }
}
