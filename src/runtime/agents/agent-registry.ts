import { AgentError } from "../../errors/agent-error.js";
import { builtinModelResolver, type ModelResolver } from "../../models/model-resolver.js";
import type { SessionStore } from "../../../stores/snapshot-store.js";
import { assertSessionStore } from "../../../stores/session-store-check.js";
import type { Agent, AnyAgent } from "./agent.js";
import { BackgroundWork } from "../background/background-work.js";
import { SessionLifecycle } from "../sessions/session-lifecycle.js";
import { DEFAULT_LIVENESS, livenessRecheckMs, type LivenessSettings } from "../sessions/snapshot-liveness.js";
import type { RuntimeEvents } from "../invocations/runtime-events.js";
import { sessionSettings, type SessionSettingsOptions } from "../sessions/session-settings.js";
import type { SessionSettings } from "../sessions/session-settings.js";
import { telemetryRegistered } from "../telemetry/telemetry.js";
import { defaultInstanceId } from "../background/instance-id.js";
import { leaseHolder } from "../sessions/lease-holder.js";
import { startWorkTakeover, type SettledHook, type TakeoverReport } from "../background/work-takeover.js";

/** Options of an {@link AgentRegistry}. */
export interface AgentRegistryOptions {
  /** The store agents declared with `store: "default"` use. */
  defaultStore?: SessionStore;
  /** Per-chunk delay of the offline echo model (ms). */
  echoDelayMs?: number;
  /** Resolves model names; defaults to the built-in models. */
  models?: ModelResolver;
  /** Heartbeat interval and expiry TTL of background work. */
  liveness?: Partial<LivenessSettings>;
  /** Listeners for turns (agent, session, snapshot, turn index, finish reason) and background work. */
  events?: RuntimeEvents;
  /** Busy policy, leases, checkpoints and limits of server-managed sessions (defaults: DEFAULT_SESSION_SETTINGS). */
  sessions?: SessionSettingsOptions;
  /**
   * OpenTelemetry spans (turns, model and tool calls) and metrics (turns, turn
   * durations, tokens, active and detached invocations) through
   * `@opentelemetry/api`. Default: on when an OpenTelemetry SDK is registered
   * globally when the registry is created. Token usage on the wire is
   * counted either way.
   */
  telemetry?: boolean;
  /** This server instance's name, recorded with the detached work it runs (default `<hostname>:<pid>`). */
  instanceId?: string;
}

/**
 * The agents a process serves, by unique name, and the environment they share
 * (default store, models, liveness, background work).
 */
export class AgentRegistry {
  private readonly agents = new Map<string, AnyAgent>();
  /** Detached work running in this process (drained at shutdown). */
  readonly background = new BackgroundWork();
  readonly defaultStore: SessionStore | undefined;
  private readonly models: ModelResolver;
  private readonly liveness: LivenessSettings;
  private readonly events: RuntimeEvents | undefined;
  private readonly sessions: SessionSettings;
  private readonly telemetry: boolean;
  private readonly instanceId: string;
  /** List, read, label, expire and delete the caller's sessions across the agents' stores. */
  readonly lifecycle: SessionLifecycle;

  constructor(options: AgentRegistryOptions = {}) {
    if (options.defaultStore !== undefined) assertSessionStore(options.defaultStore, "the registry's default store");
    this.defaultStore = options.defaultStore;
    this.models = options.models ?? builtinModelResolver({ echoDelayMs: options.echoDelayMs ?? 0 });
    this.liveness = { ...DEFAULT_LIVENESS, ...options.liveness };
    this.events = options.events;
    this.sessions = sessionSettings(options.sessions);
    this.telemetry = options.telemetry ?? telemetryRegistered();
    this.instanceId = options.instanceId ?? defaultInstanceId();
    // Leases name this process, so a restart of it (or any process on this machine) knows when their holder died.
    this.sessions.claims.self ??= leaseHolder(options.instanceId);
    this.lifecycle = new SessionLifecycle({
      ...(this.defaultStore ? { defaultStore: this.defaultStore } : {}),
      storeOf: (agent) => this.agents.get(agent)?.store,
      stores: () => this.stores(),
      liveness: this.liveness,
      ...(this.sessions.claims.requestWindow ? { requestWindow: this.sessions.claims.requestWindow } : {}),
    });
  }

  /** Registers an agent; throws ALREADY_EXISTS for a duplicate name. */
  register(agent: AnyAgent): void {
    if (this.agents.has(agent.name))
      throw new AgentError("ALREADY_EXISTS", `an agent named "${agent.name}" is already registered`);
    agent.bind({
      defaultStore: this.defaultStore,
      models: this.models,
      liveness: this.liveness,
      background: this.background,
      sessions: this.sessions,
      instance: this.instanceId,
      ...(this.events ? { events: this.events } : {}),
      ...(this.telemetry ? { telemetry: true } : {}),
    });
    this.agents.set(agent.name, agent);
  }

  /** The agent with this name; throws NOT_FOUND naming the available agents. */
  get(name: string): Agent<unknown> {
    const agent = this.agents.get(name);
    if (agent) return agent;
    if (!name) throw new AgentError("INVALID_ARGUMENT", "agent name is required");
    throw new AgentError(
      "NOT_FOUND",
      `unknown agent "${name}"; available: ${[...this.agents.keys()].join(", ") || "(none)"}`,
    );
  }

  /** Every registered agent, in registration order. */
  list(): Agent<unknown>[] {
    return [...this.agents.values()];
  }

  /** Every distinct store in use: the default one and each agent's. */
  private stores(): SessionStore[] {
    return [
      ...new Set(
        [this.defaultStore, ...this.list().map((a) => a.store)].filter((s): s is SessionStore => s !== undefined),
      ),
    ];
  }

  /**
   * Starts taking over the detached work of dead instances sharing this
   * registry's stores (see `takeOverDeadWork`): polls every quarter of the
   * heartbeat TTL and runs, in this process, the remaining inputs of each
   * pending row whose worker died, for the agents registered here. `agentd
   * serve` starts it. Returns a stop function that waits for a running pass.
   * `settled` runs before a lapsed lease of finished work is dropped (the
   * webhook relay).
   */
  startWorkTakeover(report: (outcome: TakeoverReport) => void = () => {}, settled?: SettledHook): () => Promise<void> {
    return startWorkTakeover(
      {
        stores: () => this.stores(),
        agent: (name) => this.agents.get(name),
        liveness: this.liveness,
        ...(this.sessions.claims.self ? { self: this.sessions.claims.self } : {}),
        ...(settled ? { settled } : {}),
      },
      livenessRecheckMs(this.liveness),
      report,
    );
  }
}
