import {
  context,
  createNoopMeter,
  metrics,
  ProxyTracerProvider,
  SpanStatusCode,
  trace,
  type Attributes,
  type Counter,
  type Histogram,
  type MeterProvider,
  type Span,
  type SpanOptions,
  type Tracer,
  type UpDownCounter,
} from "@opentelemetry/api";
import { AgentError } from "../../errors/agent-error.js";
import * as names from "./telemetry-names.js";

/**
 * agentd's OpenTelemetry instruments, through `@opentelemetry/api` only: with
 * no SDK registered (the default) every span and instrument is the API's
 * no-op. `agentd serve` registers the SDK when telemetry is configured (see
 * src/cli/telemetry-setup.ts); an embedding application registers its own.
 */

/** agentd's tracer (a proxy: spans start recording once an SDK is registered). */
export function agentdTracer(): Tracer {
  return trace.getTracer(names.INSTRUMENTATION_SCOPE);
}

/**
 * True when an OpenTelemetry SDK is registered globally: a tracer provider
 * behind the API's proxy, or a meter provider that is not the no-op one. The
 * default of `AgentRegistryOptions.telemetry` and `ServerOptions.telemetry`,
 * read when the registry or server is created.
 */
export function telemetryRegistered(): boolean {
  const tracerProvider = trace.getTracerProvider();
  if (
    !(tracerProvider instanceof ProxyTracerProvider) ||
    tracerProvider.getDelegateTracer(names.INSTRUMENTATION_SCOPE) !== undefined
  )
    return true;
  return !(metrics.getMeterProvider().getMeter(names.INSTRUMENTATION_SCOPE) instanceof NOOP_METER_CLASS);
}

const NOOP_METER_CLASS = createNoopMeter().constructor as new () => unknown;

/** The metric instruments agentd records. */
export interface AgentdInstruments {
  rpcServerCallDuration: Histogram;
  turns: Counter;
  turnDuration: Histogram;
  invocationsActive: UpDownCounter;
  streamsOpen: UpDownCounter;
  detachedPending: UpDownCounter;
  storeOperationDuration: Histogram;
  tokens: Counter;
  /** Tool calls by tool and outcome (ran, replayed, refused). */
  toolCalls: Counter;
}

/** Bucket boundaries (seconds) the RPC conventions advise for call durations. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** Store operations are mostly sub-millisecond (memory) to tens of milliseconds (MongoDB, fsync). */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Turns include model calls: up to minutes. */
const TURN_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

let cached: { provider: MeterProvider; instruments: AgentdInstruments } | undefined;

/**
 * The instruments of the global meter provider. The metrics API has no proxy
 * provider (an instrument made before the SDK is registered stays a no-op),
 * so they are made on first use and again whenever the global provider changed.
 */
export function agentdInstruments(): AgentdInstruments {
  const provider = metrics.getMeterProvider();
  if (cached?.provider === provider) return cached.instruments;
  const meter = provider.getMeter(names.INSTRUMENTATION_SCOPE);
  const seconds = (name: string, description: string, buckets: number[]) =>
    meter.createHistogram(name, { unit: "s", description, advice: { explicitBucketBoundaries: buckets } });
  const instruments: AgentdInstruments = {
    rpcServerCallDuration: seconds(names.METRIC_RPC_SERVER_CALL_DURATION, "Duration of RPCs served.", DURATION_BUCKETS),
    turns: meter.createCounter(names.METRIC_TURNS, {
      unit: "{turn}",
      description: "Turns finished, by agent and finish reason.",
    }),
    turnDuration: seconds(names.METRIC_TURN_DURATION, "Duration of turns, by agent and finish reason.", TURN_BUCKETS),
    invocationsActive: meter.createUpDownCounter(names.METRIC_INVOCATIONS_ACTIVE, {
      unit: "{invocation}",
      description: "Invocations running in this process (detached ones included).",
    }),
    streamsOpen: meter.createUpDownCounter(names.METRIC_STREAMS_OPEN, {
      unit: "{stream}",
      description: "Server-streaming and bidi calls open.",
    }),
    detachedPending: meter.createUpDownCounter(names.METRIC_DETACHED_PENDING, {
      unit: "{invocation}",
      description: "Detached invocations still running in this process.",
    }),
    storeOperationDuration: seconds(
      names.METRIC_STORE_OPERATION_DURATION,
      "Duration of session store operations.",
      STORE_BUCKETS,
    ),
    tokens: meter.createCounter(names.METRIC_TOKENS, {
      unit: "{token}",
      description: "Model tokens, by agent, model and direction.",
    }),
    toolCalls: meter.createCounter(names.METRIC_TOOL_CALLS, {
      unit: "{call}",
      description: "Tool calls, by tool and outcome (ran, replayed from the journal, refused as never-repeat).",
    }),
  };
  cached = { provider, instruments };
  return instruments;
}

/**
 * Marks `span` failed: status ERROR with the error's message and an
 * `exception` event (type = the AgentError status, e.g. `CANCELLED`), and
 * `error.type` = that status. The message is the one the caller gets, never a
 * stack trace of user data.
 */
export function recordFailure(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  const error = AgentError.from(err);
  span.recordException({ name: error.status, message: error.message });
  span.setAttribute(names.ATTR_ERROR_TYPE, error.status);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

/**
 * Runs `fn` inside a new span (a child of the active span): the span ends
 * when `fn` settles, failed (see {@link recordFailure}) when it throws.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = agentdTracer().startSpan(name, options);
  try {
    return await context.with(trace.setSpan(context.active(), span), () => fn(span));
  } catch (err) {
    recordFailure(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Attributes without the undefined values (OpenTelemetry drops them with a warning otherwise). */
export function definedAttributes(attributes: Record<string, string | number | boolean | undefined>): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}
