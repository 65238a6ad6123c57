import type { InputLimits } from "../runtime/sessions/input-limits.js";
import type { ConnectionLimits } from "../server/connection-limits.js";
import type { BusyPolicy } from "../types/session-state.js";
import type { FairShareConfig } from "./fair-share-args.js";
import type { WebhookConfig } from "./webhook-args.js";
import type { McpFlags } from "./mcp-args.js";

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

/** The store when `--store` is not given: an SQLite database in ./.agentd (the stock `sqlite3` shell reads it). */
export const DEFAULT_STORE = "sqlite:./.agentd/agentd.db";

/** The default port when neither `--port` nor `PORT` is set. */
export const DEFAULT_PORT = 50051;
