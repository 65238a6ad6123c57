import { parseFlags } from "./flag-suggestion.js";
import { DEFAULT_SESSION_SETTINGS } from "../runtime/sessions/session-settings.js";
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from "../server/connection-limits.js";
import { DEFAULT_GRACE_MS, DEFAULT_MAX_MESSAGE_BYTES } from "../server/server.js";
import type { BusyPolicy } from "../types/session-state.js";
import { fairShareConfig, FAIR_SHARE_OPTIONS } from "./fair-share-args.js";
import { webhookConfig, WEBHOOK_OPTIONS } from "./webhook-args.js";
import { mcpFlags, MCP_OPTIONS } from "./mcp-args.js";
import { corsOrigins, duration, instanceId, integer } from "./flag-values.js";
import { securityConfig } from "./security-flags.js";
import { DEFAULT_PORT, DEFAULT_STORE, type CliCommand, type ServeConfig } from "./serve-config.js";
import { UsageError } from "./usage-error.js";
import { retiredFileStoreMessage } from "./retired-file-store.js";
import { isFileStoreUri } from "../../stores/file-store-uri.js";

export { DEFAULT_PORT, DEFAULT_STORE, type CliCommand, type SecurityConfig, type ServeConfig } from "./serve-config.js";
export { UsageError } from "./usage-error.js";
export { USAGE } from "./usage-text.js";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

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
        "tenant-max-waiting-input-bytes": { type: "string" },
        "session-ttl": { type: "string" },
        "request-ids-kept": { type: "string" },
        "request-id-ttl": { type: "string" },
        "cors-origin": { type: "string", multiple: true },
        "first-bytes-timeout-ms": { type: "string" },
        "headers-timeout-ms": { type: "string" },
        "idle-timeout-ms": { type: "string" },
        "keepalive-interval-ms": { type: "string" },
        "keepalive-timeout-ms": { type: "string" },
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
  if (isFileStoreUri(store)) throw new UsageError(retiredFileStoreMessage("--store", store));
  const busyPolicy = (values["busy-policy"] ?? DEFAULT_SESSION_SETTINGS.busyPolicy) as BusyPolicy;
  if (!["reject", "enqueue", "interrupt"].includes(busyPolicy)) {
    throw new UsageError(`--busy-policy must be reject, enqueue or interrupt, got "${busyPolicy}"`);
  }

  const connectionLimits: Partial<ConnectionLimits> = {};
  const limitFlags: [string, keyof ConnectionLimits, number, number][] = [
    ["first-bytes-timeout-ms", "firstBytesTimeoutMs", 100, 3_600_000],
    ["headers-timeout-ms", "headersTimeoutMs", 100, 3_600_000],
    ["idle-timeout-ms", "idleTimeoutMs", 100, 86_400_000],
    ["keepalive-interval-ms", "keepaliveIntervalMs", 100, 86_400_000],
    ["keepalive-timeout-ms", "keepaliveTimeoutMs", 100, 3_600_000],
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
        ...(values["tenant-max-waiting-input-bytes"] !== undefined
          ? {
              maxTenantWaitingInputBytes: integer(
                "tenant-max-waiting-input-bytes",
                values["tenant-max-waiting-input-bytes"],
                0,
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
