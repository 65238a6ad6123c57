import type { ZodType } from "zod";
import type { ModelResolver } from "../../models/model-resolver.js";
import type { Principal } from "../../types/principal.js";
import type { SessionStore, StoreCallContext } from "../../../stores/snapshot-store.js";
import type { AgentFn } from "../agents/agent-function.js";
import type { BackgroundWork } from "../background/background-work.js";
import type { InputLimits } from "../sessions/input-limits.js";
import type { TenantInputBudget } from "../sessions/tenant-input-budget.js";
import type { TurnSlices } from "../sessions/turn-slices.js";
import type { RecordSettings } from "../sessions/turn-record.js";
import type { LivenessSettings } from "../sessions/snapshot-liveness.js";
import type { RuntimeEvents } from "./runtime-events.js";
import type { ClientTransforms } from "../agents/state-transform.js";

/** What an invocation needs from its agent. */
export interface InvocationTarget<S> {
  name: string;
  store?: SessionStore<S>;
  stateSchema?: ZodType<S>;
  transforms: ClientTransforms<S>;
  fn: AgentFn<S>;
  models: ModelResolver;
  liveness: LivenessSettings;
  background: BackgroundWork;
  events?: RuntimeEvents;
  /** Checkpoint policy and session size cap of the records this invocation writes. */
  records: RecordSettings;
  /** Most inputs queued ahead of the running turn; one more is RESOURCE_EXHAUSTED. */
  maxQueuedInputs: number;
  /** Chunks that may wait for the reader before the agent's emit waits (backpressure). */
  maxBufferedChunks: number;
  /** Bounds on steers and waiting inputs (default `DEFAULT_INPUT_LIMITS`). */
  inputs?: InputLimits;
  /** Bytes of waiting inputs each tenant may hold across its invocations (`--tenant-max-waiting-input-bytes`); unset: no such bound. */
  tenantInputs?: TenantInputBudget;
  /** Where the turns wait for their start, in the line of the caller's tenant (default the process's `PROCESS_TURN_SLICES`). */
  turnSlices?: TurnSlices;
  /** Spans and metrics of turns and model calls (OpenTelemetry API); token usage is counted either way. */
  telemetry?: boolean;
  /** This server instance's name, recorded with the detached work it runs (`--instance-id`). */
  instance: string;
}

/** Per-invocation options. */
export interface InvocationOptions {
  /** Aborting it before detach cancels the work (client disconnect). */
  signal?: AbortSignal;
  /** Passed to the store (tenant). */
  storeContext?: StoreCallContext;
  /** Request headers, passed to transforms. */
  headers?: Headers;
  /** The authenticated caller, passed to transforms and the agent function (its tenant goes in `storeContext`). */
  principal?: Principal;
  /**
   * The request ID of the first input the caller will send (`AgentInput.requestId`),
   * known before the session is taken: a new session started with it gets an ID
   * derived from owner, agent and request ID (so a retry finds it), and a
   * session busy with that input, or that committed it, is waited for under
   * REJECT instead of refused. Invalid: INVALID_ARGUMENT.
   */
  requestId?: string;
}
