import type { SqlSessionStore } from "../../stores/sql/sql-store.js";

/** Rows per table of an SQL store: what the lifecycle tests compare before and after a session. */
export async function sqlFootprint(store: SqlSessionStore<unknown>): Promise<Record<string, number>> {
  await store.ready();
  const counts: Record<string, number> = {};
  for (const table of ["heads", "records", "requests", "chunk_logs", "chunks", "webhooks", "tool_calls"]) {
    const rows = await store.engine.reader.query(`SELECT COUNT(*) AS n FROM ${table}`);
    counts[table] = Number(rows[0]!.n);
  }
  return counts;
}
