/**
 * `npm run bench:start`: what starting agentd costs — the CPU a fresh
 * `agentd serve --store memory:` process (the built CLI, dist/: run `npm run
 * build` first) has used, and the wall time, until its port accepts a
 * connection, against the same for a bare Node.js HTTP/2 server (the
 * runtime's own start: the floor). The two alternate, REPS times (default 10),
 * one process at a time; prints medians, min–max and the ratios. Every test
 * that starts a server pays this, and so does every deploy and restart.
 * Not a test: nothing is asserted.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { BUILT_CLI } from "./wire/server-process.js";

const REPS = Number(process.env.REPS ?? 10);
/** The CLI to start (default the build of this checkout), e.g. another checkout's dist/src/cli/main.js to compare. */
const CLI = process.env.AGENTD_CLI ?? BUILT_CLI;
/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux). */
const CLOCK_TICKS = 100;

const BARE_SERVER = `
const server = require("node:http2").createServer((req, res) => res.end());
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
`;

interface Start {
  cpuMs: number;
  wallMs: number;
}

/** CPU ms (user + system, all threads) the process has used so far. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** Starts `args` under node, waits for its first stdout line that `ready` accepts, measures, and kills it. */
async function measure(args: string[], ready: (line: string) => boolean): Promise<Start> {
  const started = performance.now();
  const proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"], cwd: process.cwd() });
  const result = await new Promise<Start>((resolve, reject) => {
    let pending = "";
    proc.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code} before it was ready`)));
    proc.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop()!;
      if (lines.some(ready)) resolve({ cpuMs: cpuMs(proc.pid!), wallMs: performance.now() - started });
    });
  });
  proc.removeAllListeners("exit");
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill("SIGKILL");
  await exited;
  return result;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[]): string => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;

const bare: Start[] = [];
const agentd: Start[] = [];
for (let rep = 0; rep < REPS; rep++) {
  bare.push(await measure(["-e", BARE_SERVER], (line) => line.startsWith('{"port"')));
  agentd.push(
    await measure([CLI, "serve", "--port", "0", "--store", "memory:"], (line) =>
      line.includes('"msg":"agentd listening'),
    ),
  );
}
console.log(`start until the port accepts connections, ${REPS} alternating repetitions (median, min–max)`);
for (const key of ["cpuMs", "wallMs"] as const) {
  const b = bare.map((s) => s[key]);
  const a = agentd.map((s) => s[key]);
  console.log(
    `  ${key === "cpuMs" ? "CPU ms " : "wall ms"}  bare node ${median(b).toFixed(0).padStart(5)} (${spread(b)})` +
      `  agentd ${median(a).toFixed(0).padStart(5)} (${spread(a)})  ratio ${(median(a) / median(b)).toFixed(2)}`,
  );
}
