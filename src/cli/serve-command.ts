import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { pino, type Logger } from "pino";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { AgentError } from "../errors/agent-error.js";
import type { Agent } from "../runtime/agents/agent.js";
import { AgentRegistry } from "../runtime/agents/agent-registry.js";
import type { TurnEvent } from "../runtime/invocations/runtime-events.js";
import { startSessionSweeper, sweepIntervalFor } from "../runtime/sessions/session-sweeper.js";
import { DEFAULT_LIVENESS } from "../runtime/sessions/snapshot-liveness.js";
import { agentServiceRoutes } from "../server/agent-service.js";
import { PageTokens } from "../server/page-tokens.js";
import { startServer, type RunningServer } from "../server/server.js";
import type { ServeConfig } from "./serve-config.js";
import { loadAgentModules } from "./load-agents.js";
import { loadInspectorAssets } from "./inspector-assets.js";
import { CoalescedLogDestination } from "./coalesced-log-destination.js";
import { setUpSecurity } from "./security-setup.js";
import { startTelemetry, type TelemetryHandle } from "./telemetry-setup.js";
import { traceSessionStore } from "../runtime/telemetry/traced-store.js";
import { setUpWebhooks } from "./webhook-setup.js";
import { warnOfLegacyFileStore } from "./legacy-store-hint.js";
import { checkWebhookAddress } from "./webhook-address-check.js";
import { mcpToolboxFromFlags } from "./mcp-setup.js";
import type { Webhooks } from "../runtime/webhooks/webhooks.js";
import { WEBHOOK_SESSION_TTL_GRACE_MS } from "../runtime/webhooks/webhook-settings.js";

/** A started `agentd serve`: the server plus what shutdown must release. */
export interface ServeInstance {
  readonly server: RunningServer;
  readonly registry: AgentRegistry;
  readonly logger: Logger;
  /**
   * Graceful stop: the port stops accepting and in-flight RPCs and detached
   * work get `drainMs` to finish (then are cancelled), then the store closes.
   * Idempotent.
   */
  stop(): Promise<void>;
  /** Re-reads `--auth-tokens` (on SIGHUP); logs the outcome, keeps the old tokens when the file is bad. */
  reload(): void;
}

export { redactStoreUri } from "../../stores/redact-uri.js";

/**
 * Starts agentd as configured: opens the store, registers the example agents
 * (when `config.examples`), the agents of every module and one agent per `--prompts` file (after their
 * start-up checks pass), starts the server and logs the
 * `agentd listening` line (host, port, url, store, agents). Rejects (after
 * releasing whatever it opened) when anything fails to start.
 */
export async function startServe(
  config: ServeConfig,
  logger: Logger = createCliLogger(config.logLevel),
): Promise<ServeInstance> {
  const promptAgents: Agent<unknown>[] = [];
  const mcpTools = await mcpToolboxFromFlags(config.mcp, logger);
  if (config.promptsDir !== undefined) {
    const dir = resolve(config.promptsDir);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory())
      throw new Error(`--prompts directory "${config.promptsDir}" does not exist (looked for ${dir})`);
    // Loaded only with --prompts: the .prompt toolchain (dotprompt, Handlebars, YAML) is not needed otherwise.
    const { promptAgentsFromDirectory } = await import("../prompts/prompt-agent.js");
    promptAgents.push(...promptAgentsFromDirectory(dir, mcpTools));
  }
  const modules = await loadAgentModules(config.agentModules);
  if (config.webhook) await checkWebhookAddress(config.webhook);
  if (modules.mcpHeaders) mcpTools?.useHeaders(modules.mcpHeaders);
  const userAgents = [...modules.agents, ...promptAgents];
  const security = setUpSecurity(config.security, config.host, modules.authenticators);
  const pageTokens =
    config.pageTokenSecretFile !== undefined
      ? PageTokens.fromSecretFile(config.pageTokenSecretFile)
      : PageTokens.random();
  // Start-up checks (e.g. prompt agents' smoke renders) fail the start, naming the file.
  await Promise.all(userAgents.map((agent) => agent.ready()));
  const inspector = config.inspector ? await loadInspectorAssets() : undefined;
  let store: SessionStore | undefined;
  let telemetry: TelemetryHandle | undefined;
  let webhooks: Webhooks | undefined;
  try {
    telemetry = await startTelemetry(
      {
        otel: config.otel,
        metricsPort: config.metricsPort,
        metricsHost: config.metricsHost,
        metricsTokenFile: config.metricsTokenFile,
      },
      logger,
    );
    // With webhooks on, agentd's sweep (which queues session.expired) expires sessions before MongoDB's TTL index.
    store = await openStoreFromUri(config.store, {
      logger,
      ...(config.webhook ? { ttlGraceMs: WEBHOOK_SESSION_TTL_GRACE_MS } : {}),
    });
    await checkStoreAtStart(store, logger);
    warnOfLegacyFileStore(config.store, logger);
    // With telemetry on, every store operation gets a span and a duration.
    const servedStore = telemetry ? traceSessionStore(store, storeKind(config.store)) : store;
    webhooks = config.webhook
      ? setUpWebhooks(config.webhook, store, servedStore, config.instanceId, logger, modules.webhookEndpoint)
      : undefined;
    const registry = new AgentRegistry({
      telemetry: telemetry !== undefined,
      defaultStore: webhooks?.store ?? servedStore,
      echoDelayMs: config.echoDelayMs,
      liveness: {
        ...(config.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: config.heartbeatIntervalMs } : {}),
        ...(config.heartbeatTtlMs !== undefined ? { heartbeatTtlMs: config.heartbeatTtlMs } : {}),
        ...(config.chunkRetentionMs !== undefined ? { chunkRetentionMs: config.chunkRetentionMs } : {}),
      },
      sessions: {
        busyPolicy: config.busyPolicy,
        maxSessionBytes: config.maxSessionBytes,
        maxBufferedChunks: config.maxBufferedChunks,
        inputs: config.inputLimits,
        ...(config.sessionTtlMs !== undefined ? { sessionTtlMs: config.sessionTtlMs } : {}),
        requestWindow: {
          ...(config.requestIdsKept !== undefined ? { kept: config.requestIdsKept } : {}),
          ...(config.requestIdTtlMs !== undefined ? { ttlMs: config.requestIdTtlMs } : {}),
        },
      },
      ...(config.instanceId !== undefined ? { instanceId: config.instanceId } : {}),
      // Off levels cost nothing: no per-turn event object is built for them.
      events: {
        ...(logger.isLevelEnabled("info") ? { turn: (event: TurnEvent) => logger.info(event, "turn") } : {}),
        abortObserved: (event) => logger.info(event, "abort observed"),
        backgroundFinished: (event) => logger.info(event, "background work finished"),
        workTakenOver: (event) => logger.warn(event, "took over the detached work of a dead instance"),
      },
    });
    const examples = config.examples ? await loadExampleAgents() : [];
    registerAgents(registry, [
      ...examples.map((agent) => ({ agent, source: "the example agents (--no-examples leaves them out)" })),
      ...modules.agents.map((agent, i) => ({ agent, source: `agents module "${modules.sources[i]}"` })),
      ...promptAgents.map((agent) => ({ agent, source: `--prompts "${config.promptsDir}"` })),
    ]);
    const server = await startServer({
      host: config.host,
      port: config.port,
      logger,
      maxMessageBytes: config.maxMessageBytes,
      corsOrigins: config.corsOrigins,
      ...(config.connectionLimits !== undefined ? { connectionLimits: config.connectionLimits } : {}),
      registerAgentService: agentServiceRoutes(registry, {
        pageTokens,
        ...(webhooks ? { webhooks: webhooks.outbox } : {}),
      }),
      ...(config.fairShare ? { fairShare: config.fairShare } : {}),
      // An open stream's credential is re-checked once per heartbeat (revocation, expiry).
      auth: { ...security.auth, streamRecheckMs: config.heartbeatIntervalMs ?? DEFAULT_LIVENESS.heartbeatIntervalMs },
      ...(security.tls ? { tls: security.tls } : {}),
      ...(store.ping ? { storeHealth: { ping: store.ping.bind(store) } } : {}),
      telemetry: telemetry !== undefined,
      ...(inspector ? { inspector } : {}),
      ...(config.mcp?.serve ? { mcp: { registry } } : {}),
    });
    logger.info(
      {
        host: server.host,
        port: server.port,
        url: server.url,
        store: redactStoreUri(config.store),
        agents: registry.list().map((a) => a.name),
        auth: security.methods.length > 0 ? security.methods : "none",
        tls: security.tls ? (security.tls.clientCa ? "mutual" : "on") : "off",
        ...(config.promptsDir !== undefined ? { prompts: config.promptsDir } : {}),
        ...(inspector ? { inspector: `${server.url}/inspector/` } : {}),
        ...(config.mcp?.serve ? { mcp: `${server.url}/mcp` } : {}),
        ...(telemetry
          ? {
              telemetry: {
                otlp: telemetry.otlp,
                ...(telemetry.prometheusUrl ? { prometheus: telemetry.prometheusUrl } : {}),
              },
            }
          : {}),
      },
      "agentd listening",
    );
    const stopSweeper = startSessionSweeper(
      registry.lifecycle,
      sweepIntervalFor(config.sessionTtlMs),
      ({ removed, removedChunkLogs, error }) =>
        error
          ? logger.warn({ err: error }, "sweeping expired sessions failed")
          : logger.info({ removed, removedChunkLogs }, "expired sessions deleted"),
    );
    const stopTakeover = config.takeover
      ? registry.startWorkTakeover(({ error }) => {
          if (error) logger.warn({ err: error }, "looking for detached work of dead instances failed");
        }, webhooks?.settled)
      : async () => {};
    webhooks?.start();
    mcpTools?.start();
    const openWebhooks = webhooks;
    const openStore = store;
    const openTelemetry = telemetry;
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        await stopTakeover(); // take over nothing more: this instance is going away
        const [, cancelled] = await Promise.all([
          server.close({ graceMs: config.drainMs }),
          registry.background.drain(config.drainMs),
        ]);
        if (cancelled > 0) logger.warn({ cancelled }, "background work cancelled at shutdown (rows stay pending)");
        await stopSweeper();
        await openWebhooks?.stop();
        await openStore.close?.();
        await openTelemetry?.shutdown();
        await mcpTools?.close();
      })();
      return stopping;
    };
    const reload = (): void => {
      if (!security.reloadTokens) {
        logger.info("SIGHUP: nothing to reload (no --auth-tokens)");
        return;
      }
      try {
        logger.info({ tokens: security.reloadTokens() }, "auth tokens reloaded");
      } catch (err) {
        logger.error({ error: (err as Error).message }, "auth tokens NOT reloaded; the previous tokens stay in force");
      }
    };
    return { server, registry, logger, stop, reload };
  } catch (err) {
    await webhooks?.stop();
    await store?.close?.().catch(() => undefined);
    await telemetry?.shutdown();
    await mcpTools?.close();
    throw err;
  }
}

/** The store kind a `--store` URI names (the `agentd.store` attribute of store spans and durations). */
function storeKind(uri: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1]?.toLowerCase() ?? "store";
  return scheme.startsWith("mongodb") ? "mongodb" : scheme;
}

/**
 * Registers each agent; a name served twice stops the start with a message
 * naming where both come from.
 */
function registerAgents(registry: AgentRegistry, agents: { agent: Agent<unknown>; source: string }[]): void {
  const sources = new Map<string, string>();
  for (const { agent, source } of agents) {
    const first = sources.get(agent.name);
    if (first !== undefined) {
      throw new AgentError(
        "ALREADY_EXISTS",
        `agent "${agent.name}" is defined twice: by ${first} and by ${source}; agent names must be unique (rename one)`,
      );
    }
    sources.set(agent.name, source);
    registry.register(agent);
  }
}

/**
 * Runs the store's start-up check (MongoDB: the deployment supports change
 * streams): a store that can never work (FAILED_PRECONDITION,
 * INVALID_ARGUMENT) stops the start; one that is only unreachable now is
 * logged and the server starts anyway (health says NOT_SERVING until it is back).
 */
async function checkStoreAtStart(store: SessionStore, logger: Logger): Promise<void> {
  if (!store.ready) return;
  try {
    await store.ready();
  } catch (err) {
    if (err instanceof AgentError && err.status === "UNAVAILABLE") {
      logger.warn(
        { error: err.message },
        "session store unreachable at start; serving anyway (health NOT_SERVING until it is back)",
      );
      return;
    }
    throw err;
  }
}

/**
 * The CLI's logger: JSON lines on stdout. Info lines are written together in
 * one synchronous write at most 25 ms after the first of them, warn and
 * error lines right after the event-loop turn that logged them (see
 * {@link CoalescedLogDestination}), and whatever is buffered is written at
 * exit (graceful shutdown included), so nothing is lost.
 */
export function createCliLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid } }, new CoalescedLogDestination(1));
}

/**
 * The example agents (`assistant`, `tasks`) ship beside the library in
 * `examples/` as an ordinary agents module, loaded by path like any other
 * (the library never imports them).
 */
async function loadExampleAgents(): Promise<Agent<unknown>[]> {
  const url = new URL("../../examples/example-agents.js", import.meta.url);
  const module = (await import(url.href)) as { exampleAgents(): Agent<unknown>[] };
  return module.exampleAgents();
}
