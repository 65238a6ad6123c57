import { uuidv7 } from "../../../stores/uuid-v7.js";
import type { ZodType } from "zod";
import { AgentError } from "../../errors/agent-error.js";
import { builtinModelResolver, type ModelResolver } from "../../models/model-resolver.js";
import type { AgentDescriptor, AgentInput, AgentOutput, InputAck } from "../../types/agent-io.js";
import { userText } from "../../types/content.js";
import type { AgentInit } from "../../types/session-state.js";
import type { SessionSnapshot, SnapshotStatus } from "../../types/snapshot.js";
import type { SessionStore } from "../../../stores/snapshot-store.js";
import { isSnapshotSubscriber } from "../../../stores/snapshot-store.js";
import { assertSessionStore } from "../../../stores/session-store-check.js";
import type { AgentConnection } from "./agent-connection.js";
import type { AgentFn } from "./agent-function.js";
import { BackgroundWork } from "../background/background-work.js";
import { stateJsonSchema } from "./custom-state-schema.js";
import { resolveInit, type InitTarget } from "../sessions/init-resolver.js";
import { Invocation, type InvocationOptions, type InvocationTarget } from "../invocations/invocation.js";
import * as snapshots from "../sessions/snapshot-access.js";
import { DEFAULT_LIVENESS, type LivenessSettings } from "../sessions/snapshot-liveness.js";
import { sendDetachedInput } from "../background/detached-input.js";
import { attachInvocation, type AttachedItem } from "../invocations/invocation-attach.js";
import type { ClientTransforms } from "./state-transform.js";
import type { RuntimeEvents } from "../invocations/runtime-events.js";
import { defaultInstanceId } from "../background/instance-id.js";
import { takeOverWork } from "../background/work-adoption.js";
import type { SessionHead, SnapshotRecord } from "../../../stores/snapshot-store.js";
import { validRequestId } from "../sessions/request-ledger.js";
import { DetachAnswer } from "../background/detach-answer.js";
import { DEFAULT_SESSION_SETTINGS, type SessionSettings } from "../sessions/session-settings.js";
import { DEFAULT_INPUT_LIMITS } from "../sessions/input-limits.js";

/**
 * An agent whatever its custom-state type, for collections of agents (the
 * registry, an agents module). `Agent<S>` takes and returns `S`, so
 * `Agent<unknown>` would not accept an `Agent<TaskList>`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the one place agents of every state type meet
export type AnyAgent = Agent<any>;

/**
 * Everything the runtime needs about one agent (init resolution, invocations,
 * snapshot reads): one object, built once when the agent is first used after
 * it was bound to a registry, and shared by every call.
 */
export interface AgentRuntimeConfig<S> extends InitTarget<S>, InvocationTarget<S>, snapshots.SnapshotAccessTarget<S> {}

/** Options shared by every kind of agent. */
export interface AgentDefinition<S> {
  /** Unique name; clients address the agent by it. */
  name: string;
  description?: string;
  /** zod schema of the custom state: validates client-sent state and every update. */
  stateSchema?: ZodType<S>;
  /**
   * Server-managed when set: a store, or "default" for the store the server is
   * configured with (`--store`). Client-managed when absent.
   */
  store?: SessionStore<S> | "default";
  /** Client-facing state and chunk transforms (never applied to persisted state). */
  transforms?: ClientTransforms<S>;
}

/** The process-wide services an agent uses, provided by the registry it is registered in. */
export interface AgentEnvironment {
  defaultStore?: SessionStore;
  models: ModelResolver;
  liveness: LivenessSettings;
  background: BackgroundWork;
  /** Listeners for turns and background work (the CLI logs them). */
  events?: RuntimeEvents;
  /** Busy policy, leases, checkpoints and limits of server-managed sessions. */
  sessions?: SessionSettings;
  /** Turn and model spans and metrics through the OpenTelemetry API. */
  telemetry?: boolean;
  /** This server instance's name, recorded with the detached work it runs (default `<hostname>:<pid>`). */
  instance?: string;
}

/** Per-call options of the in-process API. */
export type CallOptions = InvocationOptions;

/**
 * A stateful, multi-turn agent. The same surface serves in-process callers and
 * the RPC server: `connect` / `run` / `runText` invoke it; `getSnapshot`,
 * `listSnapshots`, `watchSnapshot` and `abort` read and control its snapshots
 * (state transform applied, expiry computed).
 */
export class Agent<S = unknown> {
  /** Brand used to recognise agents exported from user modules. */
  readonly __agentdAgent = true;
  readonly name: string;
  readonly description: string | undefined;
  readonly stateSchema: ZodType<S> | undefined;
  readonly transforms: ClientTransforms<S>;
  private readonly storeOption: SessionStore<S> | "default" | undefined;
  private readonly fn: AgentFn<S>;
  private env: AgentEnvironment = {
    models: builtinModelResolver(),
    liveness: DEFAULT_LIVENESS,
    background: new BackgroundWork(),
  };
  private bound = false;
  private config: AgentRuntimeConfig<S> | undefined;
  private readonly readiness: Promise<void>;

  /** `options.ready` is the agent's start-up check (e.g. a prompt agent's smoke render); see {@link Agent.ready}. */
  constructor(definition: AgentDefinition<S>, fn: AgentFn<S>, options: { ready?: Promise<void> } = {}) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(definition.name)) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `agent name "${definition.name}" must be letters, digits, ".", "_" or "-"`,
      );
    }
    this.name = definition.name;
    this.description = definition.description;
    this.stateSchema = definition.stateSchema;
    this.transforms = definition.transforms ?? {};
    if (definition.store !== undefined && definition.store !== "default") {
      assertSessionStore(definition.store, `agent "${definition.name}"`);
    }
    this.storeOption = definition.store;
    this.fn = fn;
    this.readiness = options.ready ?? Promise.resolve();
    this.readiness.catch(() => {}); // observed through ready()
  }

  /**
   * Resolves once the agent's start-up checks passed; rejects with the
   * problem (e.g. a prompt whose input fails its schema, naming the file).
   * `agentd serve` awaits it before listening.
   */
  ready(): Promise<void> {
    return this.readiness;
  }

  /** @internal Binds the agent to a registry's environment (once). */
  bind(env: AgentEnvironment): void {
    if (this.bound) throw new AgentError("ALREADY_EXISTS", `agent "${this.name}" is already registered`);
    if (this.storeOption === "default" && !env.defaultStore) {
      throw new AgentError(
        "FAILED_PRECONDITION",
        `agent "${this.name}" uses the default store, but none is configured`,
      );
    }
    this.env = env;
    this.bound = true;
    this.config = undefined;
  }

  /** The agent's store, or undefined for a client-managed agent. */
  get store(): SessionStore<S> | undefined {
    if (this.storeOption === "default") {
      if (!this.env.defaultStore) {
        throw new AgentError(
          "FAILED_PRECONDITION",
          `agent "${this.name}" uses the default store: register it in an AgentRegistry that has one`,
        );
      }
      return this.env.defaultStore as SessionStore<S>;
    }
    return this.storeOption;
  }

  /** The liveness settings used for heartbeats and expiry. */
  get liveness(): LivenessSettings {
    return this.env.liveness;
  }

  /** What ListAgents reports. */
  descriptor(): AgentDescriptor {
    const store = this.store;
    return {
      name: this.name,
      ...(this.description ? { description: this.description } : {}),
      stateManagement: store ? "server" : "client",
      abortable: isSnapshotSubscriber(store),
      stateSchema: stateJsonSchema(this.stateSchema),
    };
  }

  /** Starts a multi-turn invocation. Rejects with AgentError when `init` is invalid (a mode mismatch, a bad resume point or a busy session). */
  async connect(init: AgentInit<S> = {}, options: CallOptions = {}): Promise<AgentConnection<S>> {
    const config = this.runtimeConfig();
    const requestId = validRequestId(options.requestId);
    const start = await resolveInit(config, init, {
      invocationId: uuidv7(),
      ...(requestId ? { requestId } : {}),
      ...(options.storeContext ? { ctx: options.storeContext } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (start.detached) return new DetachAnswer<S>(start.detached, start.edit);
    return new Invocation(config, start, options);
  }

  /**
   * One turn: in-band failures resolve with finishReason `failed` (also when
   * the agent fails before it reads the input). An input the invocation
   * refuses (e.g. empty: INVALID_ARGUMENT) rejects, after the invocation has
   * ended and freed the session.
   */
  async run(input: AgentInput, init: AgentInit<S> = {}, options: CallOptions = {}): Promise<AgentOutput<S>> {
    const requestId = options.requestId ?? input.requestId;
    const connection = await this.connect(init, requestId ? { ...options, requestId } : options);
    let refused: unknown;
    try {
      connection.send(input);
    } catch (err) {
      refused = err;
    }
    const drained = (async () => {
      for await (const _ of connection.stream);
    })().catch(() => {});
    const output = await connection.output();
    await drained;
    if (refused !== undefined && output.finishReason !== "failed") throw refused;
    return output;
  }

  /** One turn with a user text message. */
  runText(text: string, init: AgentInit<S> = {}, options: CallOptions = {}): Promise<AgentOutput<S>> {
    return this.run({ message: userText(text) }, init, options);
  }

  /** The agent's {@link AgentRuntimeConfig}, built on first use after binding. */
  private runtimeConfig(): AgentRuntimeConfig<S> {
    if (this.config) return this.config;
    const sessions = this.env.sessions ?? DEFAULT_SESSION_SETTINGS;
    this.config = {
      name: this.name,
      store: this.store,
      stateSchema: this.stateSchema,
      transforms: this.transforms,
      fn: this.fn,
      models: this.env.models,
      liveness: this.env.liveness,
      background: this.env.background,
      busyPolicy: sessions.busyPolicy,
      claims: sessions.claims,
      records: sessions.records,
      maxQueuedInputs: sessions.maxQueuedInputs,
      maxBufferedChunks: sessions.maxBufferedChunks,
      inputs: sessions.inputs ?? DEFAULT_INPUT_LIMITS,
      ...(sessions.tenantInputs ? { tenantInputs: sessions.tenantInputs } : {}),
      instance: this.env.instance ?? defaultInstanceId(),
      ...(sessions.sessionTtlMs !== undefined ? { sessionTtlMs: sessions.sessionTtlMs } : {}),
      ...(this.env.events ? { events: this.env.events } : {}),
      ...(this.env.telemetry ? { telemetry: true } : {}),
    };
    return this.config;
  }

  /** A snapshot by ID, or a session's latest (state transform applied, expiry computed). */
  getSnapshot(
    ref: { snapshotId?: string; sessionId?: string },
    options: snapshots.SnapshotReadOptions = {},
  ): Promise<SessionSnapshot<S>> {
    return snapshots.getSnapshot(this.runtimeConfig(), ref, options);
  }

  /** A session's snapshots, newest first. */
  listSnapshots(
    sessionId: string,
    page: { pageSize?: number; pageToken?: string; includeState?: boolean } = {},
    options: snapshots.SnapshotReadOptions = {},
  ): Promise<snapshots.SnapshotPage<S>> {
    return snapshots.listSnapshots(this.runtimeConfig(), sessionId, page, options);
  }

  /** The snapshot's status now and on every change, until terminal. */
  watchSnapshot(
    snapshotId: string,
    signal: AbortSignal,
    options: snapshots.SnapshotReadOptions = {},
  ): AsyncGenerator<SnapshotStatus> {
    return snapshots.watchSnapshot(this.runtimeConfig(), snapshotId, signal, options);
  }

  /**
   * The chunks of detached work (its pending snapshot) after `afterSequence`,
   * recorded then live, ending with its output; see {@link attachInvocation}.
   */
  attach(
    request: { snapshotId: string; afterSequence?: number },
    signal: AbortSignal,
    options: snapshots.SnapshotReadOptions = {},
  ): AsyncGenerator<AttachedItem<S>> {
    return attachInvocation(this.runtimeConfig(), request, signal, options);
  }

  /**
   * @internal Takes over the detached work of `row` (the pending head record
   * of `head`) whose worker died, and runs the rest of it in this process;
   * see {@link takeOverWork}. Resolves to true when this call won it.
   */
  takeOver(head: SessionHead, row: SnapshotRecord<S>): Promise<boolean> {
    return takeOverWork(this.runtimeConfig(), head, row);
  }

  /**
   * Sends a control input (cancel, or steer with a message) to the detached
   * work of `snapshotId` running in this process; see {@link sendDetachedInput}.
   */
  sendInput(snapshotId: string, input: AgentInput, options: snapshots.SnapshotReadOptions = {}): Promise<InputAck> {
    return sendDetachedInput(this.runtimeConfig(), snapshotId, input, options.storeContext);
  }

  /** Flips a pending snapshot to aborted; resolves to the resulting status. */
  abort(snapshotId: string, options: snapshots.SnapshotReadOptions = {}): Promise<SnapshotStatus> {
    return snapshots.abortSnapshot(this.runtimeConfig(), snapshotId, options);
  }
}

/** True for values that are agents (also across module copies). */
export function isAgent(value: unknown): value is Agent<unknown> {
  return typeof value === "object" && value !== null && (value as { __agentdAgent?: unknown }).__agentdAgent === true;
}
