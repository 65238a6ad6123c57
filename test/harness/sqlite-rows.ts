import { DatabaseSync, type SQLInputValue } from "node:sqlite";

/** Runs `sql` on the SQLite file `file` beside the agentd using it (waiting for its write lock), closing it after. */
function withDatabase<T>(file: string, use: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(file);
  try {
    db.exec("PRAGMA busy_timeout = 10000");
    return use(db);
  } finally {
    db.close();
  }
}

/** The first column of the first row `sql` selects from the SQLite file `file` (e.g. a `count(*)`). */
export function sqliteValue(file: string, sql: string, ...params: SQLInputValue[]): unknown {
  return withDatabase(file, (db) => Object.values(db.prepare(sql).get(...params) ?? {})[0]);
}

/** Runs a statement that changes the SQLite file `file`; resolves to the number of rows it changed. */
export function sqliteChange(file: string, sql: string, ...params: SQLInputValue[]): number {
  return withDatabase(file, (db) => Number(db.prepare(sql).run(...params).changes));
}
