import { parseArgs } from "node:util";
import { DEFAULT_GRACE_MS, DEFAULT_MAX_MESSAGE_BYTES } from "../server/server.js";

/** Everything `agentd serve` is configured with. */
export interface ServeConfig {
  /** User agent modules (paths or specifiers), in order. */
  agentModules: string[];
  /** Directory of `.prompt` files, when given. */
  promptsDir?: string;
  host: string;
  port: number;
  /** Store URI (`memory:`, `file:<dir>`, `mongodb://…`). */
  store: string;
  echoDelayMs: number;
  maxMessageBytes: number;
  logLevel: string;
  drainMs: number;
  /** Browser origins allowed to call cross-origin (`*` = any). */
  corsOrigins: string[];
  /** Heartbeat interval of detached work (ms); undefined = runtime default. */
  heartbeatIntervalMs?: number;
  /** Age after which a pending row's heartbeat reads as expired (ms); undefined = runtime default. */
  heartbeatTtlMs?: number;
}

/** What the command line asks for. */
export type CliCommand = { kind: "help" } | { kind: "version" } | { kind: "serve"; config: ServeConfig };

/** A bad command line; the message says what to change. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The default port when neither `--port` nor `PORT` is set. */
export const DEFAULT_PORT = 50051;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** Usage text printed by `agentd --help`. */
export const USAGE = `Usage: agentd serve [agents-module ...] [options]

Serves agentd.v1.AgentService (gRPC, gRPC-Web and Connect on one port), with
grpc.health.v1.Health and server reflection. The example agents "assistant"
and "tasks" are always served; each agents module adds the Agent instances it
exports (default export, an exported array, or named exports; .ts works).

Options:
  --host <host>               interface to bind (default 127.0.0.1)
  --port <port>               TCP port, 0 = any free port (default $PORT or ${DEFAULT_PORT})
  --store <uri>               memory: | file:<dir> | mongodb://host/db (default file:./.agentd)
  --prompts <dir>             directory of .prompt files for prompt agents
  --echo-delay-ms <n>         delay between chunks of the offline echo model (default 0)
  --max-message-bytes <n>     largest accepted request message (default ${DEFAULT_MAX_MESSAGE_BYTES})
  --log-level <level>         fatal|error|warn|info|debug|trace|silent (default info)
  --cors-origin <origin>      let browsers on this origin call cross-origin (repeatable; * = any)
  --drain-ms <n>              on SIGTERM/SIGINT, how long in-flight work may finish (default ${DEFAULT_GRACE_MS})
  --heartbeat-interval-ms <n> how often detached work refreshes its pending snapshot (default 5000)
  --heartbeat-ttl-ms <n>      a pending snapshot silent this long reads as expired (default 30000)
  -h, --help                  show this help
  -v, --version               print the version
`;

/** `--cors-origin` values: repeatable and comma-separated; each `*` or an `http(s)://host[:port]` origin. */
function corsOrigins(raw: readonly string[]): string[] {
  const origins = raw.flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  for (const origin of origins) {
    if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new UsageError(`--cors-origin must be "*" or an origin like https://app.example.com, got "${origin}"`);
    }
  }
  return origins;
}

function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`--${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/**
 * Parses `argv` (without node and script) into a command. Throws
 * {@link UsageError} for unknown commands or flags and invalid values.
 * `env.PORT` is the default port.
 */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        host: { type: "string" },
        port: { type: "string" },
        store: { type: "string" },
        prompts: { type: "string" },
        "echo-delay-ms": { type: "string" },
        "max-message-bytes": { type: "string" },
        "log-level": { type: "string" },
        "drain-ms": { type: "string" },
        "heartbeat-interval-ms": { type: "string" },
        "heartbeat-ttl-ms": { type: "string" },
        "cors-origin": { type: "string", multiple: true },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split("\n")[0]} (see agentd --help)`);
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const [command, ...modules] = positionals;
  if (command === undefined || command === "help") return { kind: "help" };
  if (command !== "serve") throw new UsageError(`unknown command "${command}"; the only command is "serve" (see agentd --help)`);

  const logLevel = values["log-level"] ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  const portSource = values.port ?? env.PORT;
  const port = portSource === undefined || portSource === "" ? DEFAULT_PORT : integer("port", portSource, 0, 65535);
  const host = values.host ?? "127.0.0.1";
  if (host.trim() === "") throw new UsageError("--host must not be empty");
  const store = values.store ?? "file:./.agentd";
  if (store.trim() === "") throw new UsageError("--store must not be empty");

  return {
    kind: "serve",
    config: {
      agentModules: modules,
      ...(values.prompts !== undefined ? { promptsDir: values.prompts } : {}),
      host,
      port,
      store,
      echoDelayMs: values["echo-delay-ms"] !== undefined ? integer("echo-delay-ms", values["echo-delay-ms"], 0, 60_000) : 0,
      maxMessageBytes:
        values["max-message-bytes"] !== undefined
          ? integer("max-message-bytes", values["max-message-bytes"], 1024, 2 ** 32 - 1)
          : DEFAULT_MAX_MESSAGE_BYTES,
      logLevel,
      corsOrigins: corsOrigins(values["cors-origin"] ?? []),
      drainMs: values["drain-ms"] !== undefined ? integer("drain-ms", values["drain-ms"], 0, 3_600_000) : DEFAULT_GRACE_MS,
      ...(values["heartbeat-interval-ms"] !== undefined
        ? { heartbeatIntervalMs: integer("heartbeat-interval-ms", values["heartbeat-interval-ms"], 10, 3_600_000) }
        : {}),
      ...(values["heartbeat-ttl-ms"] !== undefined
        ? { heartbeatTtlMs: integer("heartbeat-ttl-ms", values["heartbeat-ttl-ms"], 10, 86_400_000) }
        : {}),
    },
  };
}
