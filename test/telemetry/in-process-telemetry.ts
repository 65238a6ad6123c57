/**
 * The OpenTelemetry SDK registered globally in the test process with in-memory
 * exporters, so tests can read the spans agentd ended and the metrics it
 * recorded. Register one per test (metrics are cumulative) and undo it after:
 * the API's globals are then as if no SDK had ever been registered.
 */
import { context, metrics, trace, type Attributes } from "@opentelemetry/api";
import { MeterProvider, MetricReader, type MetricData } from "@opentelemetry/sdk-metrics";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  StackContextManager,
  TracerProvider,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace";

/** A reader that exports nothing: metrics are read with `collect()`. */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** One data point of a metric: its attributes and value (a number for counters, count/sum/buckets for histograms). */
export interface RecordedPoint {
  attributes: Attributes;
  value: unknown;
}

/** The SDK as a test reads it. */
export interface InProcessTelemetry {
  /** The spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** The ended spans named `name`. */
  spansNamed(name: string): ReadableSpan[];
  /** Forgets the spans ended so far (metrics stay cumulative). */
  resetSpans(): void;
  /** The data points of metric `name` now, or [] when it was never recorded. */
  points(name: string): Promise<RecordedPoint[]>;
  /** The metrics of agentd's scope, as a reader collects them now. */
  metrics(): Promise<MetricData[]>;
  /** One metric by name (throws when it was never recorded). */
  metric(name: string): Promise<MetricData>;
  /** Unregisters the SDK and shuts it down. */
  stop(): Promise<void>;
}

/**
 * Registers a tracer provider and/or a meter provider (both by default) as the
 * global ones, and a stack context manager (`context.with` makes a context
 * active for the synchronous part of its function).
 */
export function registerInProcessTelemetry(options: { traces?: boolean; metrics?: boolean } = {}): InProcessTelemetry {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  if (options.traces ?? true) trace.setGlobalTracerProvider(tracerProvider);
  if (options.metrics ?? true) metrics.setGlobalMeterProvider(meterProvider);
  context.setGlobalContextManager(new StackContextManager().enable());
  const collect = async () => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.filter((s) => s.scope.name === "agentd").flatMap((s) => s.metrics);
  };
  return {
    spans: () => exporter.getFinishedSpans(),
    spansNamed: (name) => exporter.getFinishedSpans().filter((span) => span.name === name),
    resetSpans: () => exporter.reset(),
    points: async (name) => {
      const metric = (await collect()).find((m) => m.descriptor.name === name);
      const points: readonly { attributes: Attributes; value: unknown }[] = metric?.dataPoints ?? [];
      return points.map((point) => ({ attributes: point.attributes, value: point.value }));
    },
    metrics: collect,
    metric: async (name) => {
      const found = (await collect()).find((m) => m.descriptor.name === name);
      if (!found) throw new Error(`no metric ${name} was recorded`);
      return found;
    },
    stop: async () => {
      trace.disable();
      metrics.disable();
      context.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
