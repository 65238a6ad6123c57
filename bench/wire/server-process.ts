/**
 * Server processes for `npm run bench:wire`: agentd (`serve --port <free>
 * --store <uri> --log-level <level>`, on a port picked here) or the bare echo
 * server, each its own process so its CPU time can be read from
 * /proc/<pid>/stat apart from the load generator's.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { connect, createServer as createNetServer } from "node:net";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on Linux). */
const CLOCK_TICKS = 100;

/** A running server process under measurement. */
export interface ServerProcess {
  readonly label: string;
  readonly pid: number;
  readonly baseUrl: string;
  /** User + system CPU seconds the process has used so far (all threads, GC included). */
  cpuSeconds(): number;
  /** The system (kernel) part of {@link cpuSeconds}: syscalls, and the I/O and wake-ups they cause. */
  kernelCpuSeconds(): number;
  /** SIGTERM, then waits for exit (so `--cpu-prof` profiles get written). */
  stop(): Promise<void>;
}

/** Options of {@link startServerProcess}. */
export interface ServerProcessOptions {
  /** Extra node flags, e.g. `--cpu-prof --cpu-prof-dir=<dir>`. */
  nodeFlags?: string[];
  /** Extra environment variables (e.g. the OTEL_* ones of a traced agentd). */
  env?: NodeJS.ProcessEnv;
}

/** Options of {@link startAgentdProcess}. */
export interface AgentdProcessOptions extends ServerProcessOptions {
  /**
   * Which agentd runs: `"source"` (default) is src/cli/main.ts through tsx, as
   * in development; `"built"` is the compiled CLI (dist/src/cli/main.js, made
   * by `npm run build`) on plain Node.js, as an installed package runs it.
   */
  cli?: "source" | "built";
  /** Extra `serve` flags after the ones above (e.g. `--max-message-bytes`). */
  args?: string[];
}

/** The compiled CLI that `npm run build` writes (what an installed package runs). */
export const BUILT_CLI = `${REPO_ROOT}dist/src/cli/main.js`;

/**
 * Starts agentd on `storeUri` at `logLevel`, on a free port chosen here: its
 * `agentd listening` line is logged at info, so at `warn` or above the bench
 * waits for the port to accept connections instead.
 */
export async function startAgentdProcess(
  label: string,
  storeUri: string,
  logLevel: string,
  options: AgentdProcessOptions = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const built = options.cli === "built";
  if (built && !existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} does not exist: run \`npm run build\` first`);
  const cli = built ? BUILT_CLI : `${REPO_ROOT}src/cli/main.ts`;
  const argv = [
    cli,
    "serve",
    "--port",
    String(port),
    "--store",
    storeUri,
    "--log-level",
    logLevel,
    ...(options.args ?? []),
  ];
  return start(label, argv, { ...options, tsx: !built }, (proc) => acceptsConnections(proc, port));
}

/** Starts the bare connect-node echo server. */
export function startBareProcess(label: string, options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const argv = [`${REPO_ROOT}bench/wire/bare-echo-server.ts`];
  return start(label, argv, options, (proc) =>
    printedPort(proc, (record) => (typeof record.listening === "number" ? record.listening : undefined)),
  );
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Resolves to `port` once a TCP connection to it succeeds (polled every 20 ms while `proc` runs). */
async function acceptsConnections(proc: ChildProcess, port: number): Promise<number> {
  while (proc.exitCode === null && proc.signalCode === null) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return port;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return port; // exited: whenListening reports it
}

function nodeBinary(): string {
  const local = `${REPO_ROOT}node_modules/.bin/node`;
  return existsSync(local) ? local : process.execPath;
}

async function start(
  label: string,
  script: string[],
  options: ServerProcessOptions & { tsx?: boolean },
  ready: (proc: ChildProcess) => Promise<number>,
): Promise<ServerProcess> {
  const loader = options.tsx === false ? [] : ["--import", TSX_LOADER];
  const proc = spawn(nodeBinary(), [...(options.nodeFlags ?? []), ...loader, ...script], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const port = await whenListening(proc, exited, ready);
  return {
    label,
    pid: proc.pid!,
    baseUrl: `http://127.0.0.1:${port}`,
    cpuSeconds: () => cpuSecondsOf(proc.pid!),
    kernelCpuSeconds: () => cpuTimesOf(proc.pid!).system,
    stop: async () => {
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * The port once `ready` says the server listens; rejects with the server's
 * output when it exits first. stdout and stderr are read to the end (and
 * discarded once listening) so the server never blocks on a full pipe.
 */
async function whenListening(
  proc: ChildProcess,
  exited: Promise<void>,
  ready: (proc: ChildProcess) => Promise<number>,
): Promise<number> {
  let output = "";
  let listening = false;
  const keep = (chunk: string): void => {
    if (!listening) output += chunk;
  };
  proc.stderr!.setEncoding("utf8").on("data", keep);
  proc.stdout!.setEncoding("utf8").on("data", keep);
  const failed = exited.then((): never => {
    throw new Error(`server exited before listening:\n${output}`);
  });
  failed.catch(() => undefined); // after listening, an exit is the stop, not a failure
  const port = await Promise.race([ready(proc), failed]);
  listening = true;
  return port;
}

/** The port the server prints in a JSON line on stdout, as `portOf` reads it. */
function printedPort(
  proc: ChildProcess,
  portOf: (record: Record<string, unknown>) => number | undefined,
): Promise<number> {
  return new Promise((resolve) => {
    let pending = "";
    let found = false;
    proc.stdout!.on("data", (chunk: string) => {
      if (found) return;
      pending += chunk;
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (!line.startsWith("{")) continue;
        const port = portOf(JSON.parse(line) as Record<string, unknown>);
        if (port !== undefined) {
          found = true;
          resolve(port);
          return;
        }
      }
    });
  });
}

/** utime + stime of a process, in seconds. */
export function cpuSecondsOf(pid: number): number {
  const { user, system } = cpuTimesOf(pid);
  return user + system;
}

/** utime and stime of a process, in seconds (from /proc/<pid>/stat). */
export function cpuTimesOf(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
}
