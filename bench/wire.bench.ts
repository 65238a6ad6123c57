/**
 * Wire benchmark (`npm run bench:wire`): what a Chat turn costs over the wire
 * in agentd against a bare connect-node bidi echo server with the same
 * service, message shapes and sizes (bench/wire/bare-echo-server.ts). Starts,
 * as their own processes, agentd on the memory store, agentd on an SQLite
 * store (fsync on, in a temp directory) and the bare server, then measures, over
 * gRPC h2c with the echo model and one short user message per turn:
 *
 * - p50/p99 per turn, sequential on one Chat stream (memory store; and the
 *   persisted stores, whose turns wait for their fsyncs, when their parts run);
 * - turns per server CPU-second (utime + stime of the server process from
 *   /proc, not wall time) at 50 and 200 concurrent sessions of up to
 *   20 turns each, for the memory and persisted stores;
 *
 * - health Check p50/p99 during each throughput run: a probe calls
 *   `grpc.health.v1.Health/Check` every 25 ms over its own connection while
 *   the load runs (bench/wire/health-probe.ts; the bare server answers
 *   Check too, so the same load on the same machine gives the baseline), and
 *   the share of those Checks that agentd answered
 *   NOT_SERVING (the store's own health probe failed or timed out);
 *
 * and the ratios agentd/bare. One uncounted round warms the JITs; then REPS
 * repetitions (default 5), agentd and bare alternating which goes first;
 * medians with the min–max spread. Not a test: nothing is asserted.
 *
 * agentd runs as an installed package runs it: the compiled CLI
 * (dist/src/cli/main.js, built here first with `npm run build`) on plain
 * Node.js. BENCH_CLI=source runs src/cli/main.ts through tsx instead, as in
 * development (tsx's transform adds a `__name` call to every named closure a
 * turn creates, which the build does not have). The bare server runs through
 * tsx either way (it creates no such closures per turn).
 *
 * Environment: REPS, SEQ_TURNS (default 1000), LOAD_TURNS (turns per
 * throughput run, default 4000), BENCH_LOG_LEVEL (agentd's --log-level,
 * default info), BENCH_PARTS (comma list of
 * seq,memory,sqlite,sqlite-normal,postgres; default
 * seq,memory,sqlite (the file store is retired); sqlite-normal is SQLite with
 * ?synchronous=normal, no fsync per commit; postgres starts a real PostgreSQL server,
 * fsync on, as test/harness/postgres-server.ts does), BENCH_REQUEST_IDS (1,
 * the default: every input carries a request ID as agentd's clients send;
 * 0: none),
 * BENCH_CPU_PROF=<dir> (agentd runs with --cpu-prof into that directory;
 * summarise with `tsx bench/wire/profile-summary.ts <dir>/*.cpuprofile`),
 * BENCH_TRACING=1 (also runs a third process, agentd on the memory store with
 * OpenTelemetry on: every trace sampled, spans and metrics exported by
 * OTLP/HTTP protobuf to a local sink that drops them, and reports its rows,
 * the ratios tracing on / off, and what the instrumentation costs a turn
 * with telemetry off, measured in-process against the no-op API).
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startAgentdProcess, startBareProcess, type ServerProcess } from "./wire/server-process.js";
import { concurrentTurns, sequentialTurns, MESSAGE, type Throughput } from "./wire/wire-load.js";
import { startHealthProbe, type HealthProbed } from "./wire/health-probe.js";
import { startOtlpSink, type OtlpSink } from "./wire/otlp-sink.js";
import { telemetryOffCostMicros } from "./wire/telemetry-off-cost.js";
import { PostgresServer } from "../test/harness/postgres-server.js";

const REPS = Number(process.env.REPS ?? 5);
const SEQ_TURNS = Number(process.env.SEQ_TURNS ?? 1000);
const LOAD_TURNS = Number(process.env.LOAD_TURNS ?? 4000);
const TURNS_PER_SESSION = 20;
const CONCURRENCY = [50, 200];
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? "info";
const PARTS = new Set((process.env.BENCH_PARTS ?? "seq,memory,sqlite").split(","));
/** The stores that persist (each a part of BENCH_PARTS), in report order. */
const PERSISTED = ["sqlite", "sqlite-normal", "postgres"] as const;
const CPU_PROF = process.env.BENCH_CPU_PROF;
const TRACING = ["1", "on", "true"].includes(process.env.BENCH_TRACING ?? "");
const CLI = process.env.BENCH_CLI === "source" ? "source" : "built";

/** The environment of the traced agentd: OTLP/HTTP protobuf to `sink`, every trace sampled, SDK defaults otherwise. */
function tracingEnv(sink: OtlpSink): NodeJS.ProcessEnv {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
    OTEL_TRACES_SAMPLER: "always_on",
    OTEL_SERVICE_NAME: "agentd-bench",
  };
}

/** One measured quantity: agentd's and the bare server's value per repetition. */
interface Row {
  label: string;
  digits: number;
  agentd: number[];
  bare: number[];
  /** Print agentd/bare (false for shares, whose ratio means nothing). */
  ratio: boolean;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function summary(values: number[], digits: number): string {
  if (values.length === 0) return "—";
  return `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}]`;
}

/** A throughput run and what the health probe saw during it. */
interface ProbedLoad {
  load: Throughput;
  probed: HealthProbed;
}

/** {@link concurrentTurns} on `server` with the health probe calling it throughout. */
async function probedLoad(server: ServerProcess, sessions: number, turns: number): Promise<ProbedLoad> {
  const probe = await startHealthProbe(server);
  const load = await concurrentTurns(server, sessions, turns, TURNS_PER_SESSION).catch(async (err: unknown) => {
    await probe.stop().catch(() => undefined); // the load's failure is the one to report
    throw err;
  });
  return { load, probed: await probe.stop() };
}

/** Runs `agentd` and `bare` in the order of this repetition (alternating). */
async function pair<T>(rep: number, agentd: () => Promise<T>, bare: () => Promise<T>): Promise<[T, T]> {
  if (rep % 2 === 0) {
    const a = await agentd();
    return [a, await bare()];
  }
  const b = await bare();
  return [await agentd(), b];
}

async function main(): Promise<void> {
  const fileDir = await mkdtemp(join(tmpdir(), "agentd-bench-wire-"));
  if (CLI === "built")
    execFileSync("npm", ["run", "--silent", "build"], {
      cwd: fileURLToPath(new URL("../", import.meta.url)),
      stdio: ["ignore", "ignore", "inherit"],
    });
  const nodeFlags = CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`] : [];
  const servers: ServerProcess[] = [];
  let postgres: PostgresServer | undefined;
  const sink = TRACING ? await startOtlpSink() : undefined;
  try {
    const memory = await startAgentdProcess("agentd memory", "memory:", LOG_LEVEL, { nodeFlags, cli: CLI });
    servers.push(memory);
    const traced = sink
      ? await startAgentdProcess("agentd traced", "memory:", LOG_LEVEL, { nodeFlags, env: tracingEnv(sink), cli: CLI })
      : undefined;
    if (traced) servers.push(traced);
    if (PARTS.has("postgres")) postgres = await PostgresServer.start({ durable: true });
    const uris: Record<(typeof PERSISTED)[number], string> = {
      sqlite: `sqlite:${join(fileDir, "sqlite", "agentd.db")}`,
      "sqlite-normal": `sqlite:${join(fileDir, "sqlite-normal", "agentd.db")}?synchronous=normal`,
      postgres: postgres?.uri("bench") ?? "",
    };
    const persisted: Array<[string, ServerProcess]> = [];
    for (const name of PERSISTED) {
      if (!PARTS.has(name)) continue;
      const server = await startAgentdProcess(`agentd ${name}`, uris[name], LOG_LEVEL, { nodeFlags, cli: CLI });
      servers.push(server);
      persisted.push([name, server]);
    }
    const bare = await startBareProcess("bare");
    servers.push(bare);

    const rows: Row[] = [];
    const row = (label: string, digits: number, ratio = true): Row => {
      const r = { label, digits, agentd: [], bare: [], ratio };
      rows.push(r);
      return r;
    };
    /** The p50 and p99 rows of sequential turns on one server, `what` naming it. */
    const sequentialRows = (what: string): [Row, Row] => [
      row(`p50 ms per turn, sequential, ${what}`, 3),
      row(`p99 ms per turn, sequential, ${what}`, 3),
    ];
    /** Adds one repetition's p50 and p99 of `agentdTimes` and of the bare run `bareTimes` to `rows`. */
    const addPercentiles = ([p50, p99]: [Row, Row], agentdTimes: number[], bareTimes: number[]): void => {
      p50.agentd.push(percentile(agentdTimes, 50));
      p50.bare.push(percentile(bareTimes, 50));
      p99.agentd.push(percentile(agentdTimes, 99));
      p99.bare.push(percentile(bareTimes, 99));
    };
    const memorySeq = sequentialRows("1 stream");
    const persistedSeq = new Map(
      PARTS.has("seq") ? persisted.map(([name]) => [name, sequentialRows(`${name} store`)] as const) : [],
    );
    const loadStores = ["memory", ...persisted.map(([name]) => name), ...(traced ? ["traced"] : [])];
    const tracedSeq = traced ? sequentialRows("tracing on") : undefined;
    const load = new Map<string, Row>();
    for (const store of loadStores) {
      for (const c of CONCURRENCY) load.set(`${store}/${c}`, row(`turns per server CPU-s, ${store}, ${c} sessions`, 0));
    }
    const wall = new Map<string, Row>();
    for (const store of loadStores) {
      for (const c of CONCURRENCY) wall.set(`${store}/${c}`, row(`(wall turns/s, ${store}, ${c} sessions)`, 0));
    }
    const health = new Map<string, [Row, Row, Row]>();
    for (const store of loadStores) {
      for (const c of CONCURRENCY)
        health.set(`${store}/${c}`, [
          row(`health p50 ms, ${store}, ${c} sessions`, 2),
          row(`health p99 ms, ${store}, ${c} sessions`, 2),
          row(`(health not SERVING, ${store}, ${c} sessions)`, 2, false),
        ]);
    }
    const kernel = new Map<string, Row>();
    for (const store of loadStores) {
      for (const c of CONCURRENCY)
        kernel.set(`${store}/${c}`, row(`(kernel share of CPU, ${store}, ${c} sess.)`, 2, false));
    }

    const round = async (rep: number, counted: boolean): Promise<void> => {
      const seqTurns = counted ? SEQ_TURNS : 200;
      const loadTurns = counted ? LOAD_TURNS : 1000;
      if (PARTS.has("seq")) {
        const [a, b] = await pair(
          rep,
          () => sequentialTurns(memory, seqTurns, 50),
          () => sequentialTurns(bare, seqTurns, 50),
        );
        if (counted) addPercentiles(memorySeq, a, b);
        // The persisted stores and tracing runs are compared with the same repetition's bare run.
        for (const [name, server] of persisted) {
          const f = await sequentialTurns(server, seqTurns, 50);
          if (counted) addPercentiles(persistedSeq.get(name)!, f, b);
        }
        if (traced && tracedSeq) {
          const t = await sequentialTurns(traced, seqTurns, 50);
          if (counted) addPercentiles(tracedSeq, t, b);
        }
      }
      for (const c of CONCURRENCY) {
        // One bare run per concurrency level, shared by every store's ratios.
        let bareRun: Promise<ProbedLoad> | undefined;
        const bareOnce = () => (bareRun ??= probedLoad(bare, c, loadTurns));
        const stores: Array<readonly [string, ServerProcess | undefined]> = [
          ["memory", PARTS.has("memory") ? memory : undefined],
          ...persisted,
          ["traced", PARTS.has("memory") ? traced : undefined],
        ];
        for (const [store, server] of stores) {
          if (!server) continue;
          const [{ load: a, probed }, { load: b, probed: bareProbed }] = await pair(
            rep,
            () => probedLoad(server, c, loadTurns),
            bareOnce,
          );
          if (!counted) continue;
          const [healthP50, healthP99, notServing] = health.get(`${store}/${c}`)!;
          healthP50.agentd.push(percentile(probed.latencies, 50));
          healthP50.bare.push(percentile(bareProbed.latencies, 50));
          healthP99.agentd.push(percentile(probed.latencies, 99));
          healthP99.bare.push(percentile(bareProbed.latencies, 99));
          notServing.agentd.push(probed.notServing / probed.latencies.length);
          notServing.bare.push(bareProbed.notServing / bareProbed.latencies.length);
          load.get(`${store}/${c}`)!.agentd.push(a.turns / a.serverCpuSeconds);
          load.get(`${store}/${c}`)!.bare.push(b.turns / b.serverCpuSeconds);
          wall.get(`${store}/${c}`)!.agentd.push(a.turns / a.wallSeconds);
          wall.get(`${store}/${c}`)!.bare.push(b.turns / b.wallSeconds);
          kernel.get(`${store}/${c}`)!.agentd.push(a.serverKernelCpuSeconds / a.serverCpuSeconds);
          kernel.get(`${store}/${c}`)!.bare.push(b.serverKernelCpuSeconds / b.serverCpuSeconds);
        }
      }
    };
    await round(0, false);
    for (let rep = 0; rep < REPS; rep++) {
      await round(rep, true);
      process.stderr.write(`bench:wire repetition ${rep + 1}/${REPS} done\n`);
    }

    console.log(
      `bench:wire — gRPC h2c Chat, echo model, message "${MESSAGE}", agentd (${CLI === "built" ? "built CLI, plain node" : "source, tsx"}) --log-level ${LOG_LEVEL}; ` +
        `${REPS} repetitions (agentd/bare alternating first), median [min–max]`,
    );
    console.log(
      `sequential: ${SEQ_TURNS} turns per repetition; load: ${LOAD_TURNS} turns per run, sessions of ${TURNS_PER_SESSION} turns`,
    );
    console.log(`${"".padEnd(44)} | ${"agentd".padEnd(24)} | ${"bare connect-node echo".padEnd(24)} | agentd/bare`);
    for (const r of rows) {
      if (r.agentd.length === 0) continue;
      const ratios = !r.ratio
        ? "—"
        : summary(
            r.agentd.map((v, i) => v / r.bare[i]!),
            2,
          );
      console.log(
        `${r.label.padEnd(44)} | ${summary(r.agentd, r.digits).padEnd(24)} | ${summary(r.bare, r.digits).padEnd(24)} | ${ratios}`,
      );
    }
    if (traced) await reportTracing(rows, sink!);
  } finally {
    for (const server of servers) await server.stop();
    await sink?.close();
    await postgres?.stop();
    await rm(fileDir, { recursive: true, force: true });
  }
}

/**
 * The cost of telemetry: tracing on / off per measured quantity (same
 * repetition's values), what reached the sink, and the in-process cost of the
 * instrumentation with telemetry off (no SDK), also as a share of agentd's
 * CPU per turn at 50 sessions.
 */
async function reportTracing(rows: Row[], sink: OtlpSink): Promise<void> {
  const byLabel = new Map(rows.map((r) => [r.label, r]));
  const pairs: [string, string, string][] = [
    ["p50 ms per turn, sequential", "p50 ms per turn, sequential, 1 stream", "p50 ms per turn, sequential, tracing on"],
    ["p99 ms per turn, sequential", "p99 ms per turn, sequential, 1 stream", "p99 ms per turn, sequential, tracing on"],
    ...CONCURRENCY.map((c): [string, string, string] => [
      `turns per server CPU-s, ${c} sessions`,
      `turns per server CPU-s, memory, ${c} sessions`,
      `turns per server CPU-s, traced, ${c} sessions`,
    ]),
  ];
  console.log(
    `\ntracing on (every trace sampled, OTLP/HTTP protobuf to a local sink) / off, memory store, median [min–max]`,
  );
  for (const [label, off, on] of pairs) {
    const a = byLabel.get(off);
    const b = byLabel.get(on);
    if (!a || !b || a.agentd.length === 0 || b.agentd.length === 0) continue;
    console.log(
      `${label.padEnd(44)} | ${summary(
        b.agentd.map((v, i) => v / a.agentd[i]!),
        2,
      )}`,
    );
  }
  console.log(`OTLP received by the sink: ${JSON.stringify(sink.counts())}`);
  const offMicros = await telemetryOffCostMicros();
  const cpuPerTurn = byLabel.get(`turns per server CPU-s, memory, ${CONCURRENCY[0]} sessions`)?.agentd ?? [];
  const share =
    cpuPerTurn.length > 0
      ? ` = ${((offMicros / (1e6 / median(cpuPerTurn))) * 100).toFixed(2)}% of agentd's CPU per turn`
      : "";
  console.log(
    `telemetry off: the per-turn instrumentation (no-op API, no SDK) costs ${offMicros.toFixed(2)} µs${share}`,
  );
}

await main();
