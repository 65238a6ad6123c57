import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { pino } from "pino";
import type { Agent } from "../../src/runtime/agents/agent.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { agentServiceRoutes } from "../../src/server/agent-service.js";
import { startServer, type CloseOptions, type RunningServer } from "../../src/server/server.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { until } from "../harness/until.js";

/** Path of the pinned grpcurl (installed by scripts/install-tools.sh). */
export const GRPCURL = new URL("../../.tools/bin/grpcurl", import.meta.url).pathname;

/** A real agentd server on a free port, plus the JSON log lines it wrote. */
export interface TestServer extends RunningServer {
  /** Every log line written so far, parsed. */
  logLines(): Record<string, unknown>[];
  /** The first log line matching `predicate`, waiting for it up to `timeoutMs` (default 5 s). */
  logLine(predicate: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Graceful shutdown of the server (see `RunningServer.close`), then of background work and the store. */
  close(options?: CloseOptions): Promise<void>;
}

/**
 * Starts the real server in-process on 127.0.0.1:0 with a capturing logger,
 * serving the real AgentService (`agentServiceRoutes`) on `agents` (none by
 * default) with a memory store, as `agentd serve` wires them.
 */
export async function startTestServer(
  options: { agents?: Agent<unknown>[]; maxMessageBytes?: number } = {},
): Promise<TestServer> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const logger = pino({ level: "debug" }, sink);
  const store = new InMemorySessionStore();
  const registry = new AgentRegistry({
    defaultStore: store,
    events: {
      turn: (event) => logger.info(event, "turn"),
      abortObserved: (event) => logger.info(event, "abort observed"),
      backgroundFinished: (event) => logger.info(event, "background work finished"),
    },
  });
  for (const agent of options.agents ?? []) registry.register(agent);
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    logger,
    maxMessageBytes: options.maxMessageBytes,
    registerAgentService: agentServiceRoutes(registry),
  });
  const logLines = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  let closing: Promise<void> | undefined;
  return {
    host: server.host,
    port: server.port,
    url: server.url,
    health: server.health,
    logLines,
    logLine: (predicate, timeoutMs = 5_000) =>
      until("a matching log line", () => logLines().find(predicate), { timeoutMs, intervalMs: 10 }),
    close: (closeOptions) => {
      closing ??= (async () => {
        await server.close(closeOptions);
        await registry.background.drain(0);
        await store.close?.();
      })();
      return closing;
    },
  };
}

/** Runs grpcurl against `server` with `-plaintext`; resolves with stdout, rejects with stderr. */
export async function grpcurl(server: { port: number }, args: string[], data?: string): Promise<string> {
  if (!existsSync(GRPCURL)) throw new Error(`grpcurl not found at ${GRPCURL}: run bash scripts/install-tools.sh`);
  const argv = ["-plaintext", ...(data !== undefined ? ["-d", data] : []), `127.0.0.1:${server.port}`, ...args];
  try {
    const { stdout } = await promisify(execFile)(GRPCURL, argv, { timeout: 20_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`grpcurl ${argv.join(" ")} failed: ${e.stderr || e.stdout || e.message}`, { cause: err });
  }
}
