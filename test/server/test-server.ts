import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import type { ConnectRouter } from "@connectrpc/connect";
import { pino } from "pino";
import { startServer, type RunningServer } from "../../src/server/server.js";

/** Path of the pinned grpcurl (installed by scripts/install-tools.sh). */
export const GRPCURL = new URL("../../.tools/bin/grpcurl", import.meta.url).pathname;

/** A real agentd server on a free port, plus the JSON log lines it wrote. */
export interface TestServer extends RunningServer {
  /** Every log line written so far, parsed. */
  logLines(): Record<string, unknown>[];
}

/** Starts the real server in-process on 127.0.0.1:0 with a capturing logger. */
export async function startTestServer(
  options: { registerAgentService?: (router: ConnectRouter) => void; maxMessageBytes?: number } = {},
): Promise<TestServer> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    logger: pino({ level: "debug" }, sink),
    maxMessageBytes: options.maxMessageBytes,
    registerAgentService: options.registerAgentService ?? (() => {}),
  });
  return Object.assign(server, { logLines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) });
}

/** Runs grpcurl against `server` with `-plaintext`; resolves with stdout, rejects with stderr. */
export async function grpcurl(server: RunningServer, args: string[], data?: string): Promise<string> {
  if (!existsSync(GRPCURL)) throw new Error(`grpcurl not found at ${GRPCURL}: run bash scripts/install-tools.sh`);
  const argv = ["-plaintext", ...(data !== undefined ? ["-d", data] : []), `127.0.0.1:${server.port}`, ...args];
  try {
    const { stdout } = await promisify(execFile)(GRPCURL, argv, { timeout: 20_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`grpcurl ${argv.join(" ")} failed: ${e.stderr || e.stdout || e.message}`);
  }
}
