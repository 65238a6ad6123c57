import { inject } from "vitest";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

/** The repository root (where package.json and src/cli/main.ts live). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The tsx loader by absolute URL, so servers started in another working directory find it. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/**
 * The built copy of the sources the servers run from, when the test command made one
 * (`AGENTD_TEST_DIST`, set by scripts/test-all.sh right after `npm run build`, which copies dist/
 * there: the packaging tests rebuild dist/ itself while the suite runs); otherwise undefined and
 * the servers run the sources through tsx, so a `npx vitest run <file>` always tests the sources
 * as they are. A built start costs about half the CPU of a tsx one (no transpiling at start).
 */
const BUILT_COPY = process.env.AGENTD_TEST_DIST || undefined;

/**
 * The Node.js arguments that run the agentd CLI (`<these> serve …`, `<these> copy-store …`):
 * the built copy's when the test command made one ({@link BUILT_COPY}), else the sources'
 * (see {@link cliArgsFor}).
 */
export function agentdCliArgs(): string[] {
  return cliArgsFor(BUILT_COPY);
}

/**
 * The Node.js arguments that run the agentd CLI from `builtCopy`:
 * `--import test/harness/built-copy-imports.mjs <copy>/src/cli/main.js`, which loads TypeScript
 * agents modules with Node's own type stripping and gives their imports of `src/` the built files;
 * with no copy (undefined), `--import tsx src/cli/main.ts`.
 */
export function cliArgsFor(builtCopy: string | undefined): string[] {
  return builtCopy
    ? ["--import", `${REPO_ROOT}test/harness/built-copy-imports.mjs`, `${builtCopy}/src/cli/main.js`]
    : ["--import", TSX_LOADER, `${REPO_ROOT}src/cli/main.ts`];
}

/** Options for {@link startAgentd}. */
export interface StartAgentdOptions {
  /** Extra CLI arguments after `serve --port 0 --store <default>` (later flags win, e.g. `--store sqlite:...`). */
  args?: string[];
  /** Extra environment variables. */
  env?: NodeJS.ProcessEnv;
  /** Working directory; default the repository root. */
  cwd?: string;
  /**
   * How long to wait for the listening line; default {@link STARTUP_TIMEOUT_MS} (120 s): a safety
   * net, not an expectation. A start loads and transpiles the TypeScript sources through tsx and
   * connects to the store, which on a loaded machine can take half a minute or more.
   */
  startupTimeoutMs?: number;
  /**
   * Serve the example agents (`assistant`, `tasks`) next to the modules in
   * `args`: `true` (default) passes `--examples`, which the suites written
   * around the examples rely on; `"cli-default"` passes nothing, so the CLI's
   * own default applies (examples only without agents modules and --prompts).
   */
  examples?: true | "cli-default";
  /** `"cli-default"`: pass no `--store`, so the CLI's default store applies (in `cwd`). Default: {@link defaultStoreUri}. */
  store?: "cli-default";
  /**
   * Start the server through the `agentd` command (`node bin/agentd.js serve …`, which
   * registers tsx and resolves an agents module's `import "@agentd-dev/agentd"` itself) instead of
   * `node --import tsx src/cli/main.ts serve …`.
   */
  viaBin?: boolean;
}

/** A running `agentd serve` process. */
export interface AgentdProcess {
  /** The port it listens on. */
  readonly port: number;
  /** `host:port`, for grpcurl and gRPC dialers. */
  readonly target: string;
  /** The `url` of its listening line, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Base URL for Connect / gRPC-Web / gRPC transports (same as url). */
  readonly baseUrl: string;
  /** The child process. */
  readonly proc: ChildProcess;
  /** The parsed `agentd listening` log line. */
  readonly listening: Record<string, unknown>;
  /**
   * Sends `signal` (default SIGTERM) and resolves with the exit code once the
   * process has exited (SIGKILL after `killAfterMs`, default 15 s). Resolves
   * at once with the code if it already exited.
   */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<number | null>;
  /** Everything written to stdout and stderr so far. */
  logs(): string;
  /**
   * Everything logged so far, once every line logged before this call has been written: the
   * server writes info lines in batches, in order, so this sends a health check (Connect JSON
   * over HTTP/1.1) and waits for its log line. For asserting what the log does NOT hold.
   */
  settledLogs(): Promise<string>;
  /** stdout lines that are JSON log records, parsed. */
  logLines(): Record<string, unknown>[];
  /**
   * The first log record matching `predicate`, waiting for it up to
   * `timeoutMs` (log lines of one event-loop turn are written together, just
   * after the call's response may have reached the client).
   */
  logLine(predicate: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Waits until at least `count` log records match `predicate`; resolves with them. */
  logLinesMatching(
    predicate: (line: Record<string, unknown>) => boolean,
    count: number,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
}

/** The health check {@link AgentdProcess.settledLogs} sends as its marker. */
const HEALTH_CHECK = "/grpc.health.v1.Health/Check";

/** The default start deadline of {@link startAgentd} (a safety net for a loaded machine). */
export const STARTUP_TIMEOUT_MS = 120_000;

/** The project's Node.js (the `node` devDependency, Node 24) when installed, else the running one. */
export function nodeBinary(): string {
  const local = `${REPO_ROOT}node_modules/.bin/node`;
  return existsSync(local) ? local : process.execPath;
}

/**
 * Runs `bin/agentd.js <args>` (as a user does) in `cwd` to its exit, within
 * `timeoutMs`: its exit code (0 when it succeeded) and what it wrote to stderr.
 */
export async function runAgentdBin(
  args: string[],
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(nodeBinary(), [`${REPO_ROOT}bin/agentd.js`, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      timeout: options.timeoutMs ?? STARTUP_TIMEOUT_MS,
    });
    return { code: 0, stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

/**
 * The store servers get unless a test passes its own `--store`: the project's
 * provided `e2eStoreUri` (the `e2e-mongodb` project), else `memory:`. A
 * project that expects MongoDB but got no URI fails here instead of silently
 * running on `memory:`.
 */
export function defaultStoreUri(): string {
  let uri = "";
  let expected = "memory";
  try {
    uri = inject("e2eStoreUri") ?? "";
    expected = inject("e2eExpectedStore") ?? "memory";
  } catch {
    // not inside a vitest worker (a benchmark or script): memory
  }
  if (expected === "mongodb" && !uri.startsWith("mongodb")) {
    throw new Error(
      `this test project must run its servers on MongoDB, but its setup provided no MongoDB URI (got "${uri}")`,
    );
  }
  return uri || "memory:";
}

/**
 * Spawns `node <agentdCliArgs()> serve --port 0 --store <default>
 * [--examples] ...args` (sources through tsx, or the built copy: see {@link agentdCliArgs}; default store: see {@link defaultStoreUri}; one process, so signals
 * reach the server directly), waits for
 * its `agentd listening` line and returns a handle. Rejects with the
 * collected output if the process exits or stays silent first.
 */
export async function startAgentd(options: StartAgentdOptions = {}): Promise<AgentdProcess> {
  const entry = options.viaBin ? [`${REPO_ROOT}bin/agentd.js`] : agentdCliArgs();
  const argv = [
    ...entry,
    "serve",
    "--port",
    "0",
    ...(options.store === "cli-default" ? [] : ["--store", defaultStoreUri()]),
    ...(options.examples === "cli-default" ? [] : ["--examples"]),
    ...(options.args ?? []),
  ];
  const proc = spawn(nodeBinary(), argv, {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let stdoutText = "";
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => {
    proc.once("exit", (code, signal) => {
      exitCode = code ?? (signal ? null : code);
      resolve(exitCode);
    });
  });

  const startupTimeoutMs = options.startupTimeoutMs ?? STARTUP_TIMEOUT_MS;
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`agentd did not log "agentd listening" within ${startupTimeoutMs} ms:\n${output}`));
    }, startupTimeoutMs);
    let pending = "";
    proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      stdoutText += chunk;
      pending += chunk;
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const record = parseJson(line);
        if (record?.msg === "agentd listening") {
          clearTimeout(timer);
          resolve(record);
        }
      }
    });
    proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`agentd exited with code ${code} before listening:\n${output}`));
    });
  });

  const port = listening.port as number;
  const url = (listening.url as string) ?? `http://127.0.0.1:${port}`;
  return {
    port,
    target: `127.0.0.1:${port}`,
    url,
    baseUrl: url,
    proc,
    listening,
    stop: async (signal = "SIGTERM", killAfterMs = 15_000) => {
      if (exitCode !== undefined) return exitCode;
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill("SIGKILL"), killAfterMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    logs: () => output,
    settledLogs,
    logLines,
    logLine: async (predicate, timeoutMs = 5_000) => (await waitForLines(predicate, 1, timeoutMs))[0]!,
    logLinesMatching: (predicate, count, timeoutMs = 5_000) => waitForLines(predicate, count, timeoutMs),
  };

  async function settledLogs(): Promise<string> {
    const isHealthCheck = (line: Record<string, unknown>): boolean => line.procedure === HEALTH_CHECK;
    const before = logLines().filter(isHealthCheck).length;
    const res = await fetch(`${url}${HEALTH_CHECK}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    await res.arrayBuffer();
    await waitForLines(isHealthCheck, before + 1, 15_000);
    return output;
  }

  function logLines(): Record<string, unknown>[] {
    return stdoutText
      .split("\n")
      .map(parseJson)
      .filter((r): r is Record<string, unknown> => r !== undefined);
  }

  async function waitForLines(
    predicate: (line: Record<string, unknown>) => boolean,
    count: number,
    timeoutMs: number,
  ): Promise<Record<string, unknown>[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = logLines().filter(predicate);
      if (found.length >= count) return found;
      if (Date.now() > deadline)
        throw new Error(`fewer than ${count} matching log line(s) within ${timeoutMs} ms:\n${stdoutText.slice(-4000)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

function parseJson(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
