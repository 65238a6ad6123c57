import { parseFlags } from "./flag-suggestion.js";
import { DEFAULT_SESSION_SETTINGS } from "../runtime/sessions/session-settings.js";
import { DEFAULT_INPUT_LIMITS, type InputLimits } from "../runtime/sessions/input-limits.js";
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from "../server/connection-limits.js";
import { DEFAULT_GRACE_MS, DEFAULT_MAX_MESSAGE_BYTES } from "../server/server.js";
import type { BusyPolicy } from "../types/session-state.js";
import { fairShareConfig, FAIR_SHARE_OPTIONS, FAIR_SHARE_USAGE, type FairShareConfig } from "./fair-share-args.js";
import { webhookConfig, WEBHOOK_OPTIONS, WEBHOOK_USAGE, type WebhookConfig } from "./webhook-args.js";
import { mcpFlags, MCP_OPTIONS, MCP_USAGE, type McpFlags } from "./mcp-args.js";

/** Everything `agentd serve` is configured with. */
export interface ServeConfig {
  /** User agent modules (paths or specifiers), in order. */
  agentModules: string[];
  /**
   * Serve the example agents (`assistant`, `tasks`): `--examples` /
   * `--no-examples`, by default only when neither an agents module nor
   * `--prompts` is given (so `npm start` has them and a user's own agents
   * may take their names).
   */
  examples: boolean;
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
  /** How long the chunks of detached work are kept after it ends (ms); undefined = runtime default. */
  chunkRetentionMs?: number;
  /** This instance's name in the detached work it runs; undefined = `<hostname>:<pid>`. */
  instanceId?: string;
  /** Whether this instance takes over the detached work of dead instances (`--no-takeover`: false). */
  takeover: boolean;
  /** What a call on a busy session does when it sets no policy. */
  busyPolicy: BusyPolicy;
  /** Largest stored state of one session (bytes). */
  maxSessionBytes: number;
  /** Chunks of one invocation waiting for their reader before the agent waits (`--max-buffered-chunks`). */
  maxBufferedChunks: number;
  /** Patch and waiting-input bounds set on the command line (`--max-patch-operations`, `--max-patch-bytes`, `--max-waiting-input-bytes`). */
  inputLimits: Partial<InputLimits>;
  /** Idle time-to-live of new sessions (ms), when set. */
  sessionTtlMs?: number;
  /** How many committed request IDs a session remembers (`--request-ids-kept`), when set. */
  requestIdsKept?: number;
  /** How long a committed request ID is remembered (ms, `--request-id-ttl`), when set. */
  requestIdTtlMs?: number;
  /** Connection timeouts and caps given on the command line (unset = listener defaults). */
  connectionLimits?: Partial<ConnectionLimits>;
  /** How callers authenticate and what is served without credentials. */
  security: SecurityConfig;
  /**
   * `--otel`: export traces and metrics by OTLP (configured by the standard
   * `OTEL_*` variables) even without `OTEL_EXPORTER_OTLP_ENDPOINT`, which
   * alone also turns it on.
   */
  otel?: boolean;
  /** `--metrics-port`: serve Prometheus text at `http://<metricsHost>:<port>/metrics`. */
  metricsPort?: number;
  /** `--metrics-host`: interface of the metrics endpoint; default 127.0.0.1 whatever `--host` is. */
  metricsHost?: string;
  /** `--metrics-token-file`: scrapes must send this file's token as a bearer token. */
  metricsTokenFile?: string;
  /** The fair-share flags (unauthenticated callers' share, per-tenant limits), when any is given. */
  fairShare?: FairShareConfig;
  /** `--page-token-secret-file`: the secret page tokens are signed with (shared by instances); default a random per-process key. */
  pageTokenSecretFile?: string;
  /** `--inspector`: serve the inspector (a browser UI, a client of the API) at /inspector/ on the same port. */
  inspector: boolean;
  /** The webhook flags, when `--webhook-url` is given. */
  webhook?: WebhookConfig;
  /** The MCP flags (`--mcp-config`, `--mcp-tool-timeout`, `--mcp`), when any is given. */
  mcp?: McpFlags;
}

/** The security flags of `agentd serve`. */
export interface SecurityConfig {
  /** `--auth-tokens`: file of `TOKEN TENANT [SUBJECT]` lines. */
  authTokensFile?: string;
  /** `--auth-jwks` (URL or file) with the JWT checks that go with it. */
  jwt?: { jwks: string; audience: string; issuer?: string; tenantClaim?: string };
  /** `--tls-cert` / `--tls-key` / `--tls-client-ca` (file paths). */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
  /** `--insecure`: serve a non-loopback address without authentication. */
  insecure: boolean;
  /** `--reflection`: whether server reflection needs credentials. */
  reflection: "open" | "authenticated";
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

/** The store when `--store` is not given: an SQLite database in ./.agentd (the stock `sqlite3` shell reads it). */
export const DEFAULT_STORE = "sqlite:./.agentd/agentd.db";

/** The default port when neither `--port` nor `PORT` is set. */
export const DEFAULT_PORT = 50051;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** Usage text printed by `agentd --help`. */
export const USAGE = `Usage: agentd serve [agents-module ...] [options]
       agentd init [directory]            (create a project that serves and tests one agent; see agentd init --help)
       agentd upgrade-store <store>       (convert an older file store, or migrate an SQL store's schema; see --help)
       agentd copy-store <from> <to>      (copy every session between two stores; see agentd copy-store --help)

Serves agentd.v1.AgentService (gRPC, gRPC-Web and Connect on one port), with
grpc.health.v1.Health and server reflection. Each agents module adds the Agent
instances it exports (default export, an exported array, or named exports; .ts
works). The example agents "assistant" and "tasks" are served when no agents
module and no --prompts directory is given (or with --examples).
Through npm, flags go after "--": npm start -- --port 8080

Options:
  --host <host>               interface to bind (default 127.0.0.1)
  --port <port>               TCP port, 0 = any free port (default $PORT or ${DEFAULT_PORT})
  --store <uri>               sqlite:<file> | postgres://host/db | memory: | file:<dir> |
                              mongodb://host/db (default sqlite:./.agentd/agentd.db)
  --prompts <dir>             directory of .prompt files for prompt agents
  --examples, --no-examples   serve the example agents "assistant" and "tasks" (default: only
                              when no agents module and no --prompts is given)
  --echo-delay-ms <n>         delay between chunks of the offline echo model (default 0)
  --max-message-bytes <n>     largest accepted request message (default ${DEFAULT_MAX_MESSAGE_BYTES})
  --log-level <level>         fatal|error|warn|info|debug|trace|silent (default info)
  --cors-origin <origin>      let browsers on this origin call cross-origin (repeatable; * = any)
  --inspector                 serve the inspector, a browser UI of sessions, snapshots and live
                              work, at http://<host>:<port>/inspector/ (asks for a token with auth)
  --drain-ms <n>              on SIGTERM/SIGINT, how long in-flight work may finish (default ${DEFAULT_GRACE_MS});
                              5 s later the process exits 1 whatever still runs
  --heartbeat-interval-ms <n> how often detached work refreshes its pending snapshot (default 5000)
  --heartbeat-ttl-ms <n>      a pending snapshot silent this long is presumed dead: another instance
                              takes its work over within one more TTL, after which it reads
                              expired (default 30000)
  --instance-id <name>        this instance's name in the detached work it runs and the leases
                              it holds; one name per live instance: a restart under the same
                              name frees its predecessor's leases at once (default <hostname>:<pid>)
  --no-takeover               never take over the detached work of dead instances (this
                              instance still serves, watches and aborts it)
  --chunk-retention <duration>
                              keep the streamed chunks of detached work this long after it ends,
                              for AttachInvocation, e.g. 15m, 2h (default 1h)
  --busy-policy <policy>      reject|enqueue|interrupt: a call on a busy session that sets no
                              busy_policy (default reject)
  --max-session-bytes <n>     largest stored state of one session; a turn past it fails
                              with RESOURCE_EXHAUSTED (default ${DEFAULT_SESSION_SETTINGS.records.maxSessionBytes})
  --max-buffered-chunks <n>   streamed chunks of one call that may wait for a slow reader; the
                              agent then waits for the reader (default ${DEFAULT_SESSION_SETTINGS.maxBufferedChunks})
  --max-patch-operations <n>  operations in one init.state_patch / messages_patch; more is
                              RESOURCE_EXHAUSTED (default ${DEFAULT_INPUT_LIMITS.maxPatchOperations})
  --max-patch-bytes <n>       bytes one patch may write (values added, replaced, copied or
                              moved); more is RESOURCE_EXHAUSTED (default ${DEFAULT_INPUT_LIMITS.maxPatchBytes})
  --max-waiting-input-bytes <n>
                              bytes of inputs and steers waiting on one invocation, and of
                              steers one turn takes; more is RESOURCE_EXHAUSTED (default ${DEFAULT_INPUT_LIMITS.maxWaitingInputBytes})
  --session-ttl <duration>    delete sessions idle this long, e.g. 30m, 7d (default: keep forever);
                              a call's init.ttl overrides it per session
  --request-ids-kept <n>      how many request IDs of committed turns each session remembers
                              to answer retries (the most recent ones; default 16)
  --request-id-ttl <duration> how long a committed request ID is remembered, e.g. 1h, 7d
                              (default 24h); a retry after that runs the input again
  --first-bytes-timeout-ms <n>
                              close a connection that has not sent enough bytes to pick its
                              protocol (HTTP/2 preface or HTTP/1.1) by then (default ${DEFAULT_CONNECTION_LIMITS.firstBytesTimeoutMs})
  --headers-timeout-ms <n>    HTTP/1.1: close (408) a request whose headers are not complete
                              by then (default ${DEFAULT_CONNECTION_LIMITS.headersTimeoutMs})
  --idle-timeout-ms <n>       close an HTTP/1.1 keep-alive connection or HTTP/2 session with no
                              request or stream open for this long (default ${DEFAULT_CONNECTION_LIMITS.idleTimeoutMs})
  --max-connections <n>       open connections at most; more are closed at once (default ${DEFAULT_CONNECTION_LIMITS.maxConnections})
  --max-concurrent-streams <n>
                              HTTP/2 streams (calls) open at once per connection (default ${DEFAULT_CONNECTION_LIMITS.maxConcurrentStreams})
${FAIR_SHARE_USAGE}${WEBHOOK_USAGE}${MCP_USAGE}Observability (OpenTelemetry; see docs/observability.md):
  --otel                      export traces and metrics by OTLP; also on when OTEL_EXPORTER_OTLP_ENDPOINT
                              is set. Configured by the standard OTEL_* variables (protocol, service
                              name, sampler, batch delay, metric interval, ...)
  --metrics-port <port>       serve the metrics as Prometheus text on http://<metrics-host>:<port>/metrics
  --metrics-host <host>       interface of the metrics endpoint (default 127.0.0.1, whatever --host is:
                              the metrics sum every tenant's turns and tokens)
  --metrics-token-file <file> scrapes must send "authorization: Bearer <the token in file>" (else 401)
Security (see docs/security.md):
  --auth-tokens <file>        accept bearer tokens listed in <file>, one "TOKEN TENANT [SUBJECT]"
                              per line; re-read on SIGHUP
  --auth-jwks <url|file>      accept JWT bearer tokens signed by these keys (needs --auth-audience)
  --auth-audience <aud>       the "aud" a JWT must carry
  --auth-issuer <iss>         the "iss" a JWT must carry (optional)
  --auth-tenant-claim <name>  the JWT claim naming the tenant (default tenant)
  --tls-cert <file>           serve TLS with this PEM certificate chain (needs --tls-key)
  --tls-key <file>            the PEM private key of --tls-cert
  --tls-client-ca <file>      require client certificates signed by this CA (mutual TLS); without
                              another auth method the certificate (CN, O) is the caller
  --page-token-secret-file <file>
                              sign ListSessions/ListSnapshots page tokens with this secret (>= 32
                              bytes) so every instance sharing it accepts them, also after a restart
                              (default: a random key per process)
  --reflection <mode>         open|authenticated: whether reflection needs credentials (default open)
  --insecure                  allow serving a non-loopback --host without authentication, and
                              (on loopback) calls addressed to other names than localhost
  -h, --help                  show this help
  -v, --version               print the version
`;

/** `--cors-origin` values: repeatable and comma-separated; each `*` or an `http(s)://host[:port]` origin. */
function corsOrigins(raw: readonly string[]): string[] {
  const origins = raw
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
  for (const origin of origins) {
    if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new UsageError(`--cors-origin must be "*" or an origin like https://app.example.com, got "${origin}"`);
    }
  }
  return origins;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration flag: a whole number with a unit (ms, s, m, h, d), e.g. `90s`, `7d`. */
function duration(name: string, raw: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(raw.trim());
  if (!match) throw new UsageError(`--${name} must be a duration like 90s, 30m, 12h or 7d, got "${raw}"`);
  const ms = Number(match[1]) * DURATION_UNITS[match[2]!]!;
  if (ms < 1 || ms > 10 * 365 * 86_400_000)
    throw new UsageError(`--${name} must be between 1ms and 3650d, got "${raw}"`);
  return ms;
}

/** An instance name: 1–128 printable ASCII characters without spaces. */
function instanceId(raw: string): string {
  if (!/^[\x21-\x7e]{1,128}$/.test(raw)) {
    throw new UsageError(`--instance-id must be 1 to 128 printable characters without spaces, got "${raw}"`);
  }
  return raw;
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
    parsed = parseFlags({
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
        "chunk-retention": { type: "string" },
        "instance-id": { type: "string" },
        "busy-policy": { type: "string" },
        "max-session-bytes": { type: "string" },
        "max-buffered-chunks": { type: "string" },
        "max-patch-operations": { type: "string" },
        "max-patch-bytes": { type: "string" },
        "max-waiting-input-bytes": { type: "string" },
        "session-ttl": { type: "string" },
        "request-ids-kept": { type: "string" },
        "request-id-ttl": { type: "string" },
        "cors-origin": { type: "string", multiple: true },
        "first-bytes-timeout-ms": { type: "string" },
        "headers-timeout-ms": { type: "string" },
        "idle-timeout-ms": { type: "string" },
        "max-connections": { type: "string" },
        "max-concurrent-streams": { type: "string" },
        otel: { type: "boolean" },
        "metrics-port": { type: "string" },
        "metrics-host": { type: "string" },
        "metrics-token-file": { type: "string" },
        "page-token-secret-file": { type: "string" },
        ...FAIR_SHARE_OPTIONS,
        ...WEBHOOK_OPTIONS,
        ...MCP_OPTIONS,
        "auth-tokens": { type: "string" },
        "auth-jwks": { type: "string" },
        "auth-audience": { type: "string" },
        "auth-issuer": { type: "string" },
        "auth-tenant-claim": { type: "string" },
        "tls-cert": { type: "string" },
        "tls-key": { type: "string" },
        "tls-client-ca": { type: "string" },
        reflection: { type: "string" },
        insecure: { type: "boolean" },
        inspector: { type: "boolean" },
        examples: { type: "boolean" },
        "no-examples": { type: "boolean" },
        "no-takeover": { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (see agentd --help)`);
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const [command, ...modules] = positionals;
  if (command === undefined || command === "help") return { kind: "help" };
  if (command !== "serve")
    throw new UsageError(
      `unknown command "${command}"; the commands are "serve", "init", "upgrade-store" and "copy-store" (see agentd --help)`,
    );
  const numeric = modules.find((m) => /^\d+$/.test(m));
  if (numeric !== undefined) {
    // `npm start --port 8080` hands npm the flag and agentd only "8080".
    throw new UsageError(
      `"${numeric}" is not an agents module; to set the port through npm put the flags after "--": npm start -- --port ${numeric} (or agentd serve --port ${numeric})`,
    );
  }
  if (values.examples && values["no-examples"])
    throw new UsageError("--examples and --no-examples contradict each other; give one");

  const logLevel = values["log-level"] ?? "info";
  if (!LOG_LEVELS.includes(logLevel))
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  const portSource = values.port ?? env.PORT;
  const port = portSource === undefined || portSource === "" ? DEFAULT_PORT : integer("port", portSource, 0, 65535);
  const host = values.host ?? "127.0.0.1";
  if (host.trim() === "") throw new UsageError("--host must not be empty");
  const store = values.store ?? DEFAULT_STORE;
  if (store.trim() === "") throw new UsageError("--store must not be empty");
  const busyPolicy = (values["busy-policy"] ?? DEFAULT_SESSION_SETTINGS.busyPolicy) as BusyPolicy;
  if (!["reject", "enqueue", "interrupt"].includes(busyPolicy)) {
    throw new UsageError(`--busy-policy must be reject, enqueue or interrupt, got "${busyPolicy}"`);
  }

  const connectionLimits: Partial<ConnectionLimits> = {};
  const limitFlags: [string, keyof ConnectionLimits, number, number][] = [
    ["first-bytes-timeout-ms", "firstBytesTimeoutMs", 100, 3_600_000],
    ["headers-timeout-ms", "headersTimeoutMs", 100, 3_600_000],
    ["idle-timeout-ms", "idleTimeoutMs", 100, 86_400_000],
    ["max-connections", "maxConnections", 1, 1_000_000],
    ["max-concurrent-streams", "maxConcurrentStreams", 1, 2 ** 31 - 1],
  ];
  for (const [flag, key, min, max] of limitFlags) {
    const raw = values[flag as keyof typeof values];
    if (typeof raw === "string") connectionLimits[key] = integer(flag, raw, min, max);
  }

  const fairShare = fairShareConfig(
    values,
    connectionLimits.maxConnections ?? DEFAULT_CONNECTION_LIMITS.maxConnections,
    (message) => new UsageError(message),
  );

  const webhook = webhookConfig(values, duration, (message) => new UsageError(message));
  const mcp = mcpFlags(values, duration, (message) => new UsageError(message));

  return {
    kind: "serve",
    config: {
      agentModules: modules,
      examples:
        values.examples ?? (values["no-examples"] ? false : modules.length === 0 && values.prompts === undefined),
      ...(values.prompts !== undefined ? { promptsDir: values.prompts } : {}),
      host,
      port,
      store,
      echoDelayMs:
        values["echo-delay-ms"] !== undefined ? integer("echo-delay-ms", values["echo-delay-ms"], 0, 60_000) : 0,
      maxMessageBytes:
        values["max-message-bytes"] !== undefined
          ? integer("max-message-bytes", values["max-message-bytes"], 1024, 2 ** 32 - 1)
          : DEFAULT_MAX_MESSAGE_BYTES,
      logLevel,
      corsOrigins: corsOrigins(values["cors-origin"] ?? []),
      inspector: values.inspector === true,
      drainMs:
        values["drain-ms"] !== undefined ? integer("drain-ms", values["drain-ms"], 0, 3_600_000) : DEFAULT_GRACE_MS,
      ...(values["heartbeat-interval-ms"] !== undefined
        ? { heartbeatIntervalMs: integer("heartbeat-interval-ms", values["heartbeat-interval-ms"], 10, 3_600_000) }
        : {}),
      ...(values["heartbeat-ttl-ms"] !== undefined
        ? { heartbeatTtlMs: integer("heartbeat-ttl-ms", values["heartbeat-ttl-ms"], 10, 86_400_000) }
        : {}),
      ...(values["chunk-retention"] !== undefined
        ? { chunkRetentionMs: duration("chunk-retention", values["chunk-retention"]) }
        : {}),
      ...(values["instance-id"] !== undefined ? { instanceId: instanceId(values["instance-id"]) } : {}),
      takeover: values["no-takeover"] !== true,
      busyPolicy,
      maxSessionBytes:
        values["max-session-bytes"] !== undefined
          ? integer("max-session-bytes", values["max-session-bytes"], 1024, Number.MAX_SAFE_INTEGER)
          : DEFAULT_SESSION_SETTINGS.records.maxSessionBytes,
      maxBufferedChunks:
        values["max-buffered-chunks"] !== undefined
          ? integer("max-buffered-chunks", values["max-buffered-chunks"], 1, 1_000_000)
          : DEFAULT_SESSION_SETTINGS.maxBufferedChunks,
      inputLimits: {
        ...(values["max-patch-operations"] !== undefined
          ? { maxPatchOperations: integer("max-patch-operations", values["max-patch-operations"], 1, 1_000_000) }
          : {}),
        ...(values["max-patch-bytes"] !== undefined
          ? { maxPatchBytes: integer("max-patch-bytes", values["max-patch-bytes"], 1024, Number.MAX_SAFE_INTEGER) }
          : {}),
        ...(values["max-waiting-input-bytes"] !== undefined
          ? {
              maxWaitingInputBytes: integer(
                "max-waiting-input-bytes",
                values["max-waiting-input-bytes"],
                1024,
                Number.MAX_SAFE_INTEGER,
              ),
            }
          : {}),
      },
      ...(Object.keys(connectionLimits).length > 0 ? { connectionLimits } : {}),
      ...(values["session-ttl"] !== undefined ? { sessionTtlMs: duration("session-ttl", values["session-ttl"]) } : {}),
      ...(values["request-ids-kept"] !== undefined
        ? { requestIdsKept: integer("request-ids-kept", values["request-ids-kept"], 1, 10_000) }
        : {}),
      ...(values["request-id-ttl"] !== undefined
        ? { requestIdTtlMs: duration("request-id-ttl", values["request-id-ttl"]) }
        : {}),
      security: securityConfig(values),
      ...(values.otel ? { otel: true } : {}),
      ...(values["metrics-port"] !== undefined
        ? { metricsPort: integer("metrics-port", values["metrics-port"], 1, 65535) }
        : {}),
      ...metricsEndpointFlags(values),
      ...(fairShare ? { fairShare } : {}),
      ...(values["page-token-secret-file"] ? { pageTokenSecretFile: values["page-token-secret-file"] } : {}),
      ...(webhook ? { webhook } : {}),
      ...(mcp ? { mcp } : {}),
    },
  };
}

/** `--metrics-host` and `--metrics-token-file`, which only apply with `--metrics-port`. */
function metricsEndpointFlags(
  values: Record<string, string | boolean | string[] | undefined>,
): Pick<ServeConfig, "metricsHost" | "metricsTokenFile"> {
  const host = values["metrics-host"] as string | undefined;
  const tokenFile = values["metrics-token-file"] as string | undefined;
  if ((host ?? tokenFile) !== undefined && values["metrics-port"] === undefined)
    throw new UsageError("--metrics-host and --metrics-token-file only apply with --metrics-port");
  if (host?.trim() === "" || tokenFile?.trim() === "")
    throw new UsageError("--metrics-host and --metrics-token-file must not be empty");
  return {
    ...(host !== undefined ? { metricsHost: host } : {}),
    ...(tokenFile ? { metricsTokenFile: tokenFile } : {}),
  };
}

/** The security flags, checked for combinations that cannot work. */
function securityConfig(values: Record<string, string | boolean | string[] | undefined>): SecurityConfig {
  const text = (name: string): string | undefined => {
    const value = values[name];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} must not be empty`);
    return value;
  };
  const jwks = text("auth-jwks");
  const audience = text("auth-audience");
  const issuer = text("auth-issuer");
  const tenantClaim = text("auth-tenant-claim");
  if (jwks === undefined && (audience ?? issuer ?? tenantClaim) !== undefined) {
    throw new UsageError("--auth-audience, --auth-issuer and --auth-tenant-claim only apply with --auth-jwks");
  }
  if (jwks !== undefined && audience === undefined) {
    throw new UsageError(
      "--auth-jwks needs --auth-audience: without it, tokens issued for other services would be accepted",
    );
  }
  const certFile = text("tls-cert");
  const keyFile = text("tls-key");
  const clientCaFile = text("tls-client-ca");
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new UsageError("--tls-cert and --tls-key go together");
  if (clientCaFile !== undefined && certFile === undefined)
    throw new UsageError("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
  const reflection = text("reflection") ?? "open";
  if (reflection !== "open" && reflection !== "authenticated") {
    throw new UsageError(`--reflection must be open or authenticated, got "${reflection}"`);
  }
  const authTokensFile = text("auth-tokens");
  return {
    ...(authTokensFile !== undefined ? { authTokensFile } : {}),
    ...(jwks !== undefined && audience !== undefined
      ? {
          jwt: {
            jwks,
            audience,
            ...(issuer !== undefined ? { issuer } : {}),
            ...(tenantClaim !== undefined ? { tenantClaim } : {}),
          },
        }
      : {}),
    ...(certFile !== undefined && keyFile !== undefined
      ? { tls: { certFile, keyFile, ...(clientCaFile !== undefined ? { clientCaFile } : {}) } }
      : {}),
    insecure: values.insecure === true,
    reflection,
  };
}
