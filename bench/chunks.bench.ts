/**
 * Chunk benchmark (`npm run bench:chunks`): what a streamed chunk costs as
 * the number of chunks of one invocation grows, and whether one large input
 * stalls the server for everyone else.
 *
 * 1. In process: N chunks (10k to 1M) through the chunk channel of an
 *    invocation (AsyncChannel with the default 1024-chunk buffer), written by
 *    a writer that honours backpressure and read by one reader: ns per chunk,
 *    which stays flat when the queue is linear. The baseline row drains an
 *    unbounded array with `shift()` (the queue before issue 36), up to 100k
 *    only: it is quadratic.
 * 2. Over the wire: agentd (compiled CLI, memory store, its own process)
 *    answers a unary Run of the `assistant` agent (echo model) whose input is
 *    S MiB of one-letter words (the echo streams one chunk per word: 2^19
 *    chunks per MiB), while a client calls the gRPC health check
 *    (`grpc.health.v1.Health/Check`, Connect JSON over HTTP/1.1, from its own
 *    thread) every 10 ms:
 *    the Run's seconds, its µs per MiB (flat when linear), and the health
 *    answers' p50/p99 ms during the Run. Baseline: health p99 on the idle server.
 *    And a figure a loaded machine does not inflate: the server's longest
 *    event-loop step during the Run in main-thread CPU ms (what a health check
 *    can wait at worst, on a quiet machine), and how many steps took over 20 ms
 *    (bench/wire/event-loop-steps.mjs, preloaded into agentd).
 *
 * REPS repetitions (default 3), sizes interleaved within each; medians with
 * the min–max spread. Not a test: nothing is asserted. Environment: REPS,
 * BENCH_SIZES_MIB (default 0.5,1,2,4), BENCH_CLI=source (src through tsx).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../gen/ts/agentd/v1/agent_service_pb.js";
import { Role } from "../gen/ts/agentd/v1/content_pb.js";
import { FinishReason } from "../gen/ts/agentd/v1/state_pb.js";
import { AsyncChannel } from "../src/streams/async-channel.js";
import { startAgentdProcess } from "./wire/server-process.js";

const REPS = Number(process.env.REPS ?? 3);
const SIZES_MIB = (process.env.BENCH_SIZES_MIB ?? "0.5,1,2,4").split(",").map(Number);
const CHUNK_COUNTS = [10_000, 100_000, 1_000_000];
const BASELINE_COUNTS = [10_000, 100_000];
const CLI = process.env.BENCH_CLI === "source" ? "source" : "built";
const MIB = 1024 * 1024;
const HEALTH_INTERVAL_MS = 10;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summary(values: number[], digits: number): string {
  if (values.length === 0) return "—";
  return `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}]`;
}

/** ns per chunk: `count` chunks through a 1024-chunk channel, the writer awaiting room, one reader. */
async function channelNsPerChunk(count: number): Promise<number> {
  const channel = new AsyncChannel<{ n: number }>({ capacity: 1024 });
  const started = performance.now();
  const reading = (async () => {
    let read = 0;
    for await (const _ of channel) read++;
    return read;
  })();
  for (let n = 0; n < count; n++) {
    channel.push({ n });
    const room = channel.whenWritable();
    if (room) await room;
  }
  channel.close();
  if ((await reading) !== count) throw new Error("chunks lost");
  return ((performance.now() - started) * 1e6) / count;
}

/** ns per chunk of the queue before issue 36: an unbounded array drained with `shift()` after the writer pushed them all. */
function shiftNsPerChunk(count: number): number {
  const items: { n: number }[] = [];
  const started = performance.now();
  for (let n = 0; n < count; n++) items.push({ n });
  let read = 0;
  while (items.length > 0) if (items.shift()) read++;
  if (read !== count) throw new Error("chunks lost");
  return ((performance.now() - started) * 1e6) / count;
}

/**
 * The health prober: its own thread (event loop), so the time this process
 * spends encoding the Run and decoding its 4 MiB answer does not count as the
 * server's latency. Calls the check every `interval` ms until told to stop,
 * then posts the latencies.
 */
const PROBER = `
const { parentPort, workerData } = require("node:worker_threads");
let stop = false;
parentPort.on("message", () => (stop = true));
const check = async () => {
  const res = await fetch(workerData.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  await res.text();
  if (!res.ok) throw new Error("health check answered HTTP " + res.status);
};
(async () => {
  for (let i = 0; i < 5; i++) await check(); // warm: connection open, fetch compiled
  parentPort.postMessage("ready");
  const latencies = [];
  while (!stop) {
    const started = performance.now();
    await check();
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, workerData.interval));
  }
  parentPort.postMessage(latencies);
})();
`;

/** Health check latencies (ms), one call every {@link HEALTH_INTERVAL_MS} from when the prober is warm until `work()` settles. */
async function healthLatencies<T>(
  baseUrl: string,
  work: () => Promise<T>,
): Promise<{ latencies: number[]; result: T }> {
  const worker = new Worker(PROBER, {
    eval: true,
    workerData: { url: `${baseUrl}/grpc.health.v1.Health/Check`, interval: HEALTH_INTERVAL_MS },
  });
  const messages: unknown[] = [];
  let delivered: () => void = () => {};
  worker.on("message", (message) => {
    messages.push(message);
    delivered();
  });
  const failed = new Promise<never>((_, reject) => worker.once("error", reject));
  const nextMessage = (): Promise<unknown> =>
    messages.length > 0
      ? Promise.resolve(messages.shift())
      : Promise.race([new Promise<void>((resolve) => (delivered = resolve)).then(() => messages.shift()), failed]);
  await nextMessage(); // ready
  try {
    const result = await work();
    worker.postMessage("stop");
    return { latencies: (await nextMessage()) as number[], result };
  } finally {
    await worker.terminate();
  }
}

async function main(): Promise<void> {
  const rows = new Map<string, number[]>();
  const add = (label: string, value: number): void => {
    if (!rows.has(label)) rows.set(label, []);
    rows.get(label)!.push(value);
  };
  if (CLI === "built")
    execFileSync("npm", ["run", "--silent", "build"], {
      cwd: fileURLToPath(new URL("../", import.meta.url)),
      stdio: ["ignore", "ignore", "inherit"],
    });
  const stepsDir = mkdtempSync(join(tmpdir(), "agentd-bench-chunks-"));
  const stepsFile = join(stepsDir, "steps.jsonl");
  const server = await startAgentdProcess("agentd", "memory:", "warn", {
    cli: CLI,
    args: ["--max-message-bytes", String(16 * MIB)],
    nodeFlags: ["--import", pathToFileURL(fileURLToPath(new URL("./wire/event-loop-steps.mjs", import.meta.url))).href],
    env: { AGENTD_LOOP_STEPS_FILE: stepsFile },
  });
  /** `work()`, with the server's longest event-loop step (CPU ms) and its steps over 20 ms meanwhile. */
  const loopSteps = async <T>(work: () => Promise<T>): Promise<{ result: T; longestMs: number; over20: number }> => {
    const lines = (): string[] => {
      try {
        return readFileSync(stepsFile, "utf8").trim().split("\n").filter(Boolean);
      } catch {
        return [];
      }
    };
    const before = lines().length;
    process.kill(server.pid, "SIGUSR2"); // start
    await new Promise((resolve) => setTimeout(resolve, 50));
    const result = await work();
    process.kill(server.pid, "SIGUSR2"); // report
    while (lines().length === before) await new Promise((resolve) => setTimeout(resolve, 10));
    const { longestStepCpuMs, stepsOver20CpuMs } = JSON.parse(lines().at(-1)!) as Record<string, number>;
    return { result, longestMs: longestStepCpuMs!, over20: stepsOver20CpuMs! };
  };
  const transport = createGrpcTransport({ baseUrl: server.baseUrl, readMaxBytes: 64 * MIB, writeMaxBytes: 64 * MIB });
  const client = createClient(AgentService, transport);
  const run = async (mib: number): Promise<number> => {
    const text = "a ".repeat(Math.round((mib * MIB) / 2));
    const started = performance.now();
    const { output } = await client.run(
      {
        init: { agent: "assistant" },
        input: { message: { role: Role.USER, content: [{ kind: { case: "text", value: text } }] } },
      },
      { timeoutMs: 600_000 },
    );
    if (output?.finishReason !== FinishReason.STOP) throw new Error("the Run did not finish with STOP");
    return (performance.now() - started) / 1000;
  };
  try {
    await channelNsPerChunk(1_000_000); // warm-up, uncounted
    await run(0.25);
    for (let rep = 0; rep < REPS; rep++) {
      for (const count of CHUNK_COUNTS) add(`channel ns/chunk, ${count} chunks`, await channelNsPerChunk(count));
      for (const count of BASELINE_COUNTS) add(`(baseline: array shift() ns/chunk, ${count})`, shiftNsPerChunk(count));
      const idle = await healthLatencies(server.baseUrl, () => new Promise((resolve) => setTimeout(resolve, 1_000)));
      add("(baseline: health p99 ms, idle server)", percentile(idle.latencies, 99));
      // Sizes interleaved, the order reversed every other repetition.
      const sizes = rep % 2 === 0 ? SIZES_MIB : [...SIZES_MIB].reverse();
      for (const mib of sizes) {
        const measured = await healthLatencies(server.baseUrl, () => loopSteps(() => run(mib)));
        const { latencies: health, result: steps } = measured;
        const seconds = steps.result;
        add(`echo Run s, ${mib} MiB (${Math.round((mib * MIB) / 2)} chunks)`, seconds);
        add(`echo Run µs per KiB, ${mib} MiB`, (seconds * 1e6) / (mib * 1024));
        add(`health p50 ms during ${mib} MiB Run`, percentile(health, 50));
        add(`health p99 ms during ${mib} MiB Run`, percentile(health, 99));
        add(`server's longest event-loop step, CPU ms, ${mib} MiB Run`, steps.longestMs);
        add(`server's event-loop steps over 20 CPU ms, ${mib} MiB Run`, steps.over20);
      }
    }
  } finally {
    await server.stop();
    rmSync(stepsDir, { recursive: true, force: true });
  }
  const width = Math.max(...[...rows.keys()].map((k) => k.length));
  console.log(`bench:chunks — ${REPS} repetitions, median [min–max] (agentd ${CLI}, memory store)`);
  for (const [label, values] of rows)
    console.log(`${label.padEnd(width)}  ${summary(values, values[0]! < 10 ? 2 : 0)}`);
}

await main();
