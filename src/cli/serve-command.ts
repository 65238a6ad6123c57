import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { pino, type Logger } from "pino";
import { redactStoreUri } from "../../stores/redact-uri.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { exampleAgents } from "../examples/example-agents.js";
import type { Agent } from "../runtime/agent.js";
import { AgentRegistry } from "../runtime/agent-registry.js";
import { promptAgentsFromDirectory } from "../runtime/prompt-agent.js";
import { agentServiceRoutes } from "../server/agent-service.js";
import { startServer, type RunningServer } from "../server/server.js";
import type { ServeConfig } from "./args.js";
import { loadAgentModules } from "./load-agents.js";
import { setUpSecurity } from "./security-setup.js";

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
 * Starts agentd as configured: opens the store, registers the example agents,
 * the agents of every module and one agent per `--prompts` file (after their
 * start-up checks pass), starts the server and logs the
 * `agentd listening` line (host, port, url, store, agents). Rejects (after
 * releasing whatever it opened) when anything fails to start.
 */
export async function startServe(config: ServeConfig, logger: Logger = createCliLogger(config.logLevel)): Promise<ServeInstance> {
  const promptAgents: Agent<unknown>[] = [];
  if (config.promptsDir !== undefined) {
    const dir = resolve(config.promptsDir);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory()) throw new Error(`--prompts directory "${config.promptsDir}" does not exist (looked for ${dir})`);
    promptAgents.push(...promptAgentsFromDirectory(dir));
  }
  const modules = await loadAgentModules(config.agentModules);
  const userAgents = [...modules.agents, ...promptAgents];
  const security = setUpSecurity(config.security, config.host, modules.authenticators);
  // Start-up checks (e.g. prompt agents' smoke renders) fail the start, naming the file.
  await Promise.all(userAgents.map((agent) => agent.ready()));
  let store: SessionStore | undefined;
  try {
    store = await openStoreFromUri(config.store);
    const registry = new AgentRegistry({
      defaultStore: store,
      echoDelayMs: config.echoDelayMs,
      liveness: {
        ...(config.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: config.heartbeatIntervalMs } : {}),
        ...(config.heartbeatTtlMs !== undefined ? { heartbeatTtlMs: config.heartbeatTtlMs } : {}),
      },
      sessions: { busyPolicy: config.busyPolicy, maxSessionBytes: config.maxSessionBytes },
      events: {
        turn: (event) => logger.info(event, "turn"),
        abortObserved: (event) => logger.info(event, "abort observed"),
        backgroundFinished: (event) => logger.info(event, "background work finished"),
      },
    });
    for (const agent of [...exampleAgents(), ...userAgents]) registry.register(agent);
    const server = await startServer({
      host: config.host,
      port: config.port,
      logger,
      maxMessageBytes: config.maxMessageBytes,
      corsOrigins: config.corsOrigins,
      ...(config.connectionLimits !== undefined ? { connectionLimits: config.connectionLimits } : {}),
      registerAgentService: agentServiceRoutes(registry),
      auth: security.auth,
      ...(security.tls ? { tls: security.tls } : {}),
      ...(store.ping ? { storeHealth: { ping: store.ping.bind(store) } } : {}),
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
      },
      "agentd listening",
    );
    const openStore = store;
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        const [, cancelled] = await Promise.all([
          server.close({ graceMs: config.drainMs }),
          registry.background.drain(config.drainMs),
        ]);
        if (cancelled > 0) logger.warn({ cancelled }, "background work cancelled at shutdown (rows stay pending)");
        await openStore.close?.();
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
    await store?.close?.().catch(() => undefined);
    throw err;
  }
}

/** The CLI's logger: JSON lines on stdout, written synchronously so nothing is lost at exit. */
export function createCliLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid } }, pino.destination({ dest: 1, sync: true }));
}
