// npm run bench:restart — clients ride out a crash (issue 47).
//
// For each client language (LANGS=ts,go,python): agentd on a fresh SQLite store
// (STORE=mongodb: a database on mongo-java-server, or MONGODB_URI) with the
// echo model's 100 ms delay per chunk is SIGKILLed and restarted on the same
// port every 2–4 s (each incarnation up that long once listening) while
// CONVERSATIONS (8) conversations of TURNS (25) turns run ROUNDS (3) times
// through that language's client with its default retry policy (a failed turn
// is counted; the conversation goes on in a new Chat resuming its session).
// Prints per kill: the downtime and the calls that ended before the next kill,
// failed ones by code; then per language: calls, failed (%), inputs lost,
// inputs stored twice, retries, and the failed calls tallied by reason (code
// and message). TS_LEGACY=1 adds the TypeScript client with
// the old count-bounded budget (5 attempts) for comparison.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KillRestartLoop } from "../test/harness/kill-restart-loop.js";
import { mongoForTests } from "../test/harness/mongo-java-server.js";
import {
  checkStored,
  failureReasons,
  perKill,
  runDriver,
  runTypeScriptDriver,
  type DriverResult,
  type StoredCheck,
} from "../test/harness/restart-workload.js";

const CONVERSATIONS = Number(process.env.CONVERSATIONS ?? 8);
const TURNS = Number(process.env.TURNS ?? 25);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const STORE = process.env.STORE ?? "sqlite";
const LANGS = (process.env.LANGS ?? "ts,go,python").split(",").filter(Boolean);
const variants = [...LANGS, ...(process.env.TS_LEGACY === "1" ? ["ts-legacy"] : [])];

const mongo = STORE === "mongodb" ? await mongoForTests() : undefined;
const summary: string[] = [];
try {
  for (const variant of variants) {
    const dir = await mkdtemp(join(tmpdir(), "agentd-restart-bench-"));
    const storeUri = mongo
      ? mongoDatabase(mongo.uri, `restart_${variant.replace("-", "_")}_${Date.now()}`)
      : `sqlite:${join(dir, "agentd.db")}`;
    const loop = new KillRestartLoop({ args: ["--store", storeUri, "--echo-delay-ms", "100"] });
    try {
      await loop.start();
      loop.run();
      const results: DriverResult[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const workload = { conversations: CONVERSATIONS, turns: TURNS, tag: `${variant}-r${round}` };
        results.push(
          variant === "ts-legacy"
            ? await runTypeScriptDriver(loop.url, workload, { maxAttempts: 5, maxElapsedMs: Infinity })
            : await runDriver(variant as "ts" | "go" | "python", loop.url, workload),
        );
      }
      await loop.stop();
      const checks: StoredCheck[] = [];
      for (const result of results) checks.push(await checkStored(loop.url, result));
      console.log(`\n${variant} (${STORE} store): per kill`);
      for (const row of perKill(loop.kills, results)) {
        const failed = Object.values(row.failed).reduce((a, b) => a + b, 0);
        console.log(
          `  kill ${String(row.kill).padStart(3)}  down ${String(row.downMs).padStart(5)} ms  calls ${String(row.calls).padStart(3)}  failed ${failed}` +
            (failed ? ` ${JSON.stringify(row.failed)}` : ""),
        );
      }
      const calls = checks.reduce((n, c) => n + c.ok + c.failed, 0);
      const failed = checks.reduce((n, c) => n + c.failed, 0);
      const line =
        `${variant}: ${loop.kills.length} kills, ${calls} calls, ${failed} failed (${((100 * failed) / calls).toFixed(1)}%), ` +
        `lost ${checks.reduce((n, c) => n + c.lost.length, 0)}, duplicated ${checks.reduce((n, c) => n + c.duplicated.length, 0)}, ` +
        `failed but stored ${checks.reduce((n, c) => n + c.failedButStored, 0)}, retries ${results.reduce((n, r) => n + r.retries, 0)}`;
      console.log(line);
      summary.push(line);
      const reasons = failureReasons(results);
      if (reasons.length > 0) {
        console.log(`${variant} (${STORE} store): failed calls by reason`);
        for (const [reason, count] of reasons) console.log(`  ${String(count).padStart(4)}  ${reason}`);
        summary.push(...reasons.map(([reason, count]) => `  ${String(count).padStart(4)}  ${reason}`));
      }
    } finally {
      await loop.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
} finally {
  await mongo?.stop();
}
console.log(
  `\nSIGKILL + restart every 2-4 s, ${CONVERSATIONS} x ${TURNS} x ${ROUNDS}, ${STORE} store, echo delay 100 ms:\n${summary.join("\n")}`,
);

/** `uri` with its database path set to `name`. */
function mongoDatabase(uri: string, name: string): string {
  const url = new URL(uri);
  url.pathname = `/${name}`;
  return url.toString();
}
