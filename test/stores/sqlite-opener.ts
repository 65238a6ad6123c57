/**
 * Child process of test/stores/sqlite-open-race.test.ts: loads the SQL store,
 * prints `ready`, then for each line `<file> <sessionId>` on stdin opens that
 * SQLite file (constructor, migrations), commits one session and closes it,
 * printing `ok` or `error <status> <message>`.
 */
import { createInterface } from "node:readline";
import { SqlSessionStore } from "../../stores/sql/sql-store.js";
import { SqliteEngine } from "../../stores/sql/sqlite-engine.js";
import { checkpointRecord, commitOf, type CounterState } from "./snapshot-factory.js";

async function openAndCommit(path: string, sessionId: string): Promise<string> {
  let store: SqlSessionStore<CounterState> | undefined;
  try {
    store = new SqlSessionStore<CounterState>(new SqliteEngine(path));
    await store.ready();
    const head = await store.commit(commitOf(undefined, checkpointRecord(sessionId, `${sessionId}-r0`)));
    return head ? "ok" : "error none: the commit moved nothing";
  } catch (err) {
    const e = err as { status?: string; message?: string };
    return `error ${e.status ?? "?"} ${e.message ?? String(err)}`;
  } finally {
    await store?.close();
  }
}

process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const [path, sessionId] = line.split(" ") as [string, string];
  process.stdout.write(`${await openAndCommit(path, sessionId)}\n`);
}
