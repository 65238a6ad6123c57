// npm run bench:abort — how fast detached work stops after an Abort.
//
// For each store, and for the same process and across processes: start a
// detached turn on server A (slow offline model, so it is still running), call
// Abort on A (same process) or on B (another process sharing the store), and
// measure the time from the Abort RPC returning to A's worker observing the
// cancellation (A's `abort observed` log line carries the instant; both
// processes share this machine's clock). p50 / p99 over N aborts, reported with
// ratios against the in-memory same-process baseline measured in this run.
//
// Environment: ABORTS (per scenario, default 200); BENCH_STORES, a comma list of
// mongodb,sqlite,postgres (default all; the memory baseline always runs):
// sqlite shares one file between the two processes (the other process's Abort
// is noticed by polling PRAGMA data_version), postgres starts a real server
// (fsync on) whose LISTEN/NOTIFY carries it.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SnapshotStatus } from "../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../test/harness/agentd-process.js";
import { mongoForTests } from "../test/harness/mongo-java-server.js";
import { PostgresServer } from "../test/harness/postgres-server.js";
import { textInput } from "../test/harness/wire-chat.js";
import { agentServiceClient } from "../test/harness/wire-clients.js";

const N = Number(process.env.ABORTS ?? 200);
const STORES = new Set((process.env.BENCH_STORES ?? "mongodb,sqlite,postgres").split(","));

interface Scenario {
  name: string;
  storeUri: string;
  crossProcess: boolean;
}

interface Sample {
  /** Abort RPC sent -> worker observed. */
  fromSend: number;
  /** Abort RPC returned -> worker observed (<= 0: observed before the answer arrived). */
  fromReturn: number;
}

async function measure(scenario: Scenario): Promise<Sample[]> {
  const args = ["--store", scenario.storeUri, "--log-level", "info"];
  const a = await startAgentd({ args });
  const b = scenario.crossProcess ? await startAgentd({ args }) : a;
  try {
    const onA = agentServiceClient(a.baseUrl, "grpc");
    const onB = agentServiceClient(b.baseUrl, "grpc");
    const samples: Sample[] = [];
    for (let i = 0; i < N; i++) {
      const { output } = await onA.run({
        init: { agent: "assistant" },
        input: {
          ...textInput("a reply slow enough to still be running when the abort arrives", { echoDelayMs: 200 }),
          detach: true,
        },
      });
      const snapshotId = output!.snapshotId;
      const sentAt = Date.now();
      const { status } = await onB.abort({ agent: "assistant", snapshotId });
      const returnedAt = Date.now();
      if (status !== SnapshotStatus.ABORTED)
        throw new Error(`abort of ${snapshotId} returned status ${SnapshotStatus[status]}`);
      const observed = await observedAt(a, snapshotId);
      samples.push({ fromSend: observed - sentAt, fromReturn: observed - returnedAt });
    }
    return samples;
  } finally {
    await a.stop();
    if (b !== a) await b.stop();
  }
}

/** Waits for A's `abort observed` line for this snapshot and returns its instant. */
async function observedAt(server: AgentdProcess, snapshotId: string): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = server.logLines().find((l) => l.msg === "abort observed" && l.snapshotId === snapshotId);
    if (line) return line.observedAt as number;
    if (Date.now() > deadline) throw new Error(`worker never observed the abort of ${snapshotId}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The connection string with its database path set. */
function withDatabase(uri: string, database: string): string {
  const url = new URL(uri);
  url.pathname = `/${database}`;
  return url.toString();
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const mongo = STORES.has("mongodb") ? await mongoForTests() : undefined;
  const postgres = STORES.has("postgres") ? await PostgresServer.start({ durable: true }) : undefined;
  const dir = await mkdtemp(join(tmpdir(), "agentd-bench-abort-"));
  const both = (store: string, uri: (where: string) => string): Scenario[] =>
    STORES.has(store)
      ? [
          { name: `${store}, same process`, storeUri: uri("same"), crossProcess: false },
          { name: `${store}, across processes`, storeUri: uri("cross"), crossProcess: true },
        ]
      : [];
  const scenarios: Scenario[] = [
    { name: "memory, same process", storeUri: "memory:", crossProcess: false },
    ...both("mongodb", (where) => withDatabase(mongo!.uri, `bench_abort_${where}`)),
    ...both("sqlite", (where) => `sqlite:${join(dir, `${where}.db`)}`),
    ...both("postgres", (where) => postgres!.uri(`bench_abort_${where}`)),
  ];
  const rows: { name: string; send: number[]; ret: number[] }[] = [];
  try {
    for (const scenario of scenarios) {
      const samples = await measure(scenario);
      rows.push({
        name: scenario.name,
        send: samples.map((x) => x.fromSend).sort((x, y) => x - y),
        ret: samples.map((x) => x.fromReturn).sort((x, y) => x - y),
      });
      console.error(`measured ${scenario.name}`);
    }
  } finally {
    await mongo?.stop();
    await postgres?.stop();
  }
  const base = rows[0]!;
  const ratio = (v: number, b: number) => `${(Math.max(v, 1) / Math.max(b, 1)).toFixed(1)}x`;
  console.log(`Time until the detached worker observed the abort, ${N} aborts per scenario (ms, 1 ms clock).`);
  console.log(
    "From the Abort RPC returning (<= 0: already observed when the answer arrived), and from the RPC being sent;",
  );
  console.log("ratios compare the sent->observed figures with the in-memory same-process baseline of this run.");
  console.log(
    "| scenario | returned->observed p50 | p99 | sent->observed p50 | p99 | max | p50 vs memory | p99 vs memory |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    const [p50, p99] = [percentile(r.send, 50), percentile(r.send, 99)];
    console.log(
      `| ${r.name} | ${percentile(r.ret, 50)} | ${percentile(r.ret, 99)} | ${p50} | ${p99} | ${r.send.at(-1)} | ${ratio(p50, percentile(base.send, 50))} | ${ratio(p99, percentile(base.send, 99))} |`,
    );
  }
}

await main();
