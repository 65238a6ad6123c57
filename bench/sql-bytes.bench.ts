/**
 * SQL bytes-per-turn benchmark (`npm run bench:sql-bytes`): one in-process
 * conversation of TURNS turns (default 400; echo model, bench:wire's short
 * message) on the SQL store, with a request ID on every input (as agentd's
 * clients send them) and, in the same run, without. It counts the bytes each
 * turn sends to the database in its INSERT and UPDATE statements (the
 * values bound, by table: text as UTF-8, a number as 8 bytes), so a head
 * rewritten whole on every turn, or a request-ID list growing with the
 * session, would show as bytes per turn growing with the turn. Prints the
 * bytes of turn 10 and of turn TURNS (and the means of turns 1–10 and of the
 * last 10; one more turn runs after the last so the conversation's close is
 * not counted), by table, and the ratio last / turn 10 (the issue's target:
 * ≤ 1.3 with request IDs on).
 *
 * Environment: TURNS, BENCH_STORES (comma list of sqlite,postgres; default
 * sqlite; postgres starts a real PostgreSQL server as the tests do).
 * Deterministic (no timing): one run per store and variant. Not a test:
 * nothing is asserted.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineCustomAgent } from "../src/runtime/agents/custom-agent.js";
import { AgentRegistry } from "../src/runtime/agents/agent-registry.js";
import { generateModelTurn } from "../src/runtime/agents/model-turn.js";
import type { AgentStreamChunk } from "../src/types/agent-io.js";
import { userText } from "../src/types/content.js";
import type { SessionStore } from "../stores/snapshot-store.js";
import type { SqlEngine, SqlTransaction, SqlValue } from "../stores/sql/sql-engine.js";
import { openSqlStore } from "../stores/sql/sql-store-uri.js";
import { SqlSessionStore } from "../stores/sql/sql-store.js";
import { PostgresServer } from "../test/harness/postgres-server.js";
import { MESSAGE } from "./wire/wire-load.js";

const TURNS = Number(process.env.TURNS ?? 400);
const STORES = (process.env.BENCH_STORES ?? "sqlite").split(",");
const FIRST = 10;

/** Bytes bound to the INSERT/UPDATE statements of one turn, by table (and how many statements, key `table#`). */
type TurnBytes = Map<string, number>;

function sizeOf(params: readonly SqlValue[] | undefined): number {
  let n = 0;
  for (const p of params ?? []) n += typeof p === "string" ? Buffer.byteLength(p) : p === null ? 0 : 8;
  return n;
}

/** The engine `engine`, counting into `current()` the bytes its transactions' writes bind. */
function counting(engine: SqlEngine, current: () => TurnBytes): SqlEngine {
  const count = (sql: string, params: readonly SqlValue[] | undefined): void => {
    const m = /^\s*(?:INSERT\s+INTO|UPDATE)\s+(\w+)/i.exec(sql);
    if (!m) return;
    const bytes = current();
    bytes.set(m[1]!, (bytes.get(m[1]!) ?? 0) + sizeOf(params));
    bytes.set(`${m[1]!}#`, (bytes.get(`${m[1]!}#`) ?? 0) + 1);
  };
  const wrapped = Object.create(engine) as SqlEngine;
  wrapped.transaction = <T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> =>
    engine.transaction((tx) =>
      fn({
        query: (sql, params) => tx.query(sql, params),
        run: (sql, params) => (count(sql, params), tx.run(sql, params)),
        write: (sql, params) => (count(sql, params), tx.write(sql, params)),
        guard: (sql, params) => (count(sql, params), tx.guard(sql, params)),
        announce: (change) => tx.announce(change),
      }),
    );
  return wrapped;
}

/** One conversation; the bytes of each turn (index 0 = turn 1). */
async function conversation(uri: string, requestIds: boolean): Promise<TurnBytes[]> {
  const opened = await openSqlStore(uri);
  const perTurn: TurnBytes[] = [new Map()];
  const store = new SqlSessionStore(counting(opened.engine, () => perTurn[perTurn.length - 1]!));
  const registry = new AgentRegistry({ defaultStore: store as SessionStore });
  const agent = defineCustomAgent({
    name: "bench",
    store: "default",
    turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
  });
  registry.register(agent);
  const connection = await agent.connect();
  const turnEnds: (() => void)[] = [];
  const reader = (async () => {
    for await (const chunk of connection.stream as AsyncIterable<AgentStreamChunk>)
      if (chunk.turnEnd) turnEnds.shift()?.();
  })();
  // One turn more than reported: closing the conversation (the session's release) is not a turn's cost.
  for (let turn = 1; turn <= TURNS + 1; turn++) {
    if (turn > 1) perTurn.push(new Map());
    const ended = new Promise<void>((resolve) => turnEnds.push(resolve));
    connection.send({
      message: userText(MESSAGE),
      ...(requestIds ? { requestId: `bench-${turn.toString(36)}-${Math.random().toString(36).slice(2, 10)}` } : {}),
    });
    await ended;
  }
  await connection.output();
  await reader;
  const rows = await store.engine.reader.query("SELECT COUNT(*) AS n FROM requests");
  if (requestIds && Number(rows[0]!.n) === 0)
    throw new Error("no request ID was committed: the bench measures nothing");
  await store.close();
  return perTurn;
}

const total = (b: TurnBytes): number =>
  [...b.entries()].reduce((a, [table, n]) => (table.endsWith("#") ? a : a + n), 0);
const mean = (turns: TurnBytes[]): number => turns.reduce((a, b) => a + total(b), 0) / turns.length;
const byTable = (b: TurnBytes): string =>
  [...b.entries()]
    .filter(([t]) => !t.endsWith("#"))
    .sort()
    .map(([t, n]) => `${t} ${n} (${b.get(`${t}#`)} stmt)`)
    .join(", ");

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "agentd-sql-bytes-"));
  let postgres: PostgresServer | undefined;
  try {
    console.log(
      `bench:sql-bytes — bytes bound to each turn's INSERT/UPDATE statements, ${TURNS} turns, echo model, message "${MESSAGE}"`,
    );
    console.log(
      `store    | request IDs | turn ${FIRST} | turn ${TURNS} | ratio | mean 1–${FIRST} | mean last 10 | ratio`,
    );
    for (const kind of STORES) {
      for (const requestIds of [true, false]) {
        let uri: string;
        if (kind === "postgres") {
          postgres ??= await PostgresServer.start();
          uri = postgres.uri(`bytes_${requestIds ? "ids" : "none"}`);
        } else uri = `sqlite:${join(dir, `${requestIds ? "ids" : "none"}.db`)}`;
        const turns = await conversation(uri, requestIds);
        const first = turns[FIRST - 1]!;
        const last = turns[TURNS - 1]!;
        const firstMean = mean(turns.slice(0, FIRST));
        const lastMean = mean(turns.slice(TURNS - 10, TURNS));
        console.log(
          `${kind.padEnd(8)} | ${(requestIds ? "on" : "off").padEnd(11)} | ${String(total(first)).padStart(5)} B | ${String(total(last)).padStart(5)} B | ${(total(last) / total(first)).toFixed(2)} | ${firstMean.toFixed(0).padStart(7)} B | ${lastMean.toFixed(0).padStart(9)} B | ${(lastMean / firstMean).toFixed(2)}`,
        );
        console.log(`           turn ${FIRST}: ${byTable(first)}; turn ${TURNS}: ${byTable(last)}`);
      }
    }
  } finally {
    await postgres?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
