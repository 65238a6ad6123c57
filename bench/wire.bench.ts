/**
 * Wire benchmark (`npm run bench:wire`): what a Chat turn costs over the wire
 * in agentd against a bare connect-node bidi echo server with the same
 * service, message shapes and sizes (bench/wire/bare-echo-server.ts). Starts,
 * as their own processes, agentd on the memory store, agentd on a file store
 * (fsync on, in a temp directory) and the bare server, then measures, over
 * gRPC h2c with the echo model and one short user message per turn:
 *
 * - p50/p99 per turn, sequential on one Chat stream (memory store);
 * - turns per server CPU-second (utime + stime of the server process from
 *   /proc, not wall time) at 50 and 200 concurrent sessions of up to
 *   20 turns each, for the memory and file stores;
 *
 * and the ratios agentd/bare. One uncounted round warms the JITs; then REPS
 * repetitions (default 5), agentd and bare alternating which goes first;
 * medians with the min–max spread. Not a test: nothing is asserted.
 *
 * Environment: REPS, SEQ_TURNS (default 1000), LOAD_TURNS (turns per
 * throughput run, default 4000), BENCH_LOG_LEVEL (agentd's --log-level,
 * default info), BENCH_PARTS (comma list of seq,memory,file; default all),
 * BENCH_CPU_PROF=<dir> (agentd runs with --cpu-prof into that directory;
 * summarise with `tsx bench/wire/profile-summary.ts <dir>/*.cpuprofile`).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAgentdProcess, startBareProcess, type ServerProcess } from "./wire/server-process.js";
import { concurrentTurns, sequentialTurns, MESSAGE } from "./wire/wire-load.js";

const REPS = Number(process.env.REPS ?? 5);
const SEQ_TURNS = Number(process.env.SEQ_TURNS ?? 1000);
const LOAD_TURNS = Number(process.env.LOAD_TURNS ?? 4000);
const TURNS_PER_SESSION = 20;
const CONCURRENCY = [50, 200];
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? "info";
const PARTS = new Set((process.env.BENCH_PARTS ?? "seq,memory,file").split(","));
const CPU_PROF = process.env.BENCH_CPU_PROF;

/** One measured quantity: agentd's and the bare server's value per repetition. */
interface Row {
  label: string;
  digits: number;
  agentd: number[];
  bare: number[];
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
  const nodeFlags = CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`] : [];
  const servers: ServerProcess[] = [];
  try {
    const memory = await startAgentdProcess("agentd memory", "memory:", LOG_LEVEL, { nodeFlags });
    servers.push(memory);
    const file = PARTS.has("file") ? await startAgentdProcess("agentd file", `file:${fileDir}`, LOG_LEVEL, { nodeFlags }) : undefined;
    if (file) servers.push(file);
    const bare = await startBareProcess("bare");
    servers.push(bare);

    const rows: Row[] = [];
    const row = (label: string, digits: number): Row => {
      const r = { label, digits, agentd: [], bare: [] };
      rows.push(r);
      return r;
    };
    const p50 = row("p50 ms per turn, sequential, 1 stream", 3);
    const p99 = row("p99 ms per turn, sequential, 1 stream", 3);
    const load = new Map<string, Row>();
    for (const store of ["memory", "file"]) {
      for (const c of CONCURRENCY) load.set(`${store}/${c}`, row(`turns per server CPU-s, ${store}, ${c} sessions`, 0));
    }
    const wall = new Map<string, Row>();
    for (const store of ["memory", "file"]) {
      for (const c of CONCURRENCY) wall.set(`${store}/${c}`, row(`(wall turns/s, ${store}, ${c} sessions)`, 0));
    }

    const round = async (rep: number, counted: boolean): Promise<void> => {
      const seqTurns = counted ? SEQ_TURNS : 200;
      const loadTurns = counted ? LOAD_TURNS : 1000;
      if (PARTS.has("seq")) {
        const [a, b] = await pair(rep, () => sequentialTurns(memory, seqTurns, 50), () => sequentialTurns(bare, seqTurns, 50));
        if (counted) {
          p50.agentd.push(percentile(a, 50));
          p50.bare.push(percentile(b, 50));
          p99.agentd.push(percentile(a, 99));
          p99.bare.push(percentile(b, 99));
        }
      }
      for (const c of CONCURRENCY) {
        // One bare run per concurrency level, shared by both stores' ratios.
        let bareRun: ReturnType<typeof concurrentTurns> | undefined;
        const bareOnce = () => (bareRun ??= concurrentTurns(bare, c, loadTurns, TURNS_PER_SESSION));
        for (const [store, server] of [["memory", PARTS.has("memory") ? memory : undefined], ["file", file]] as const) {
          if (!server) continue;
          const [a, b] = await pair(rep, () => concurrentTurns(server, c, loadTurns, TURNS_PER_SESSION), bareOnce);
          if (!counted) continue;
          load.get(`${store}/${c}`)!.agentd.push(a.turns / a.serverCpuSeconds);
          load.get(`${store}/${c}`)!.bare.push(b.turns / b.serverCpuSeconds);
          wall.get(`${store}/${c}`)!.agentd.push(a.turns / a.wallSeconds);
          wall.get(`${store}/${c}`)!.bare.push(b.turns / b.wallSeconds);
        }
      }
    };
    await round(0, false);
    for (let rep = 0; rep < REPS; rep++) {
      await round(rep, true);
      process.stderr.write(`bench:wire repetition ${rep + 1}/${REPS} done\n`);
    }

    console.log(
      `bench:wire — gRPC h2c Chat, echo model, message "${MESSAGE}", agentd --log-level ${LOG_LEVEL}; ` +
        `${REPS} repetitions (agentd/bare alternating first), median [min–max]`,
    );
    console.log(`sequential: ${SEQ_TURNS} turns per repetition; load: ${LOAD_TURNS} turns per run, sessions of ${TURNS_PER_SESSION} turns`);
    console.log(`${"".padEnd(44)} | ${"agentd".padEnd(24)} | ${"bare connect-node echo".padEnd(24)} | agentd/bare`);
    for (const r of rows) {
      if (r.agentd.length === 0) continue;
      const ratios = r.agentd.map((v, i) => v / r.bare[i]!);
      console.log(`${r.label.padEnd(44)} | ${summary(r.agentd, r.digits).padEnd(24)} | ${summary(r.bare, r.digits).padEnd(24)} | ${summary(ratios, 2)}`);
    }
  } finally {
    for (const server of servers) await server.stop();
    await rm(fileDir, { recursive: true, force: true });
  }
}

await main();
