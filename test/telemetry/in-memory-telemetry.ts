import { context, metrics, trace, type Attributes } from "@opentelemetry/api";
import { MeterProvider, MetricReader, type DataPoint } from "@opentelemetry/sdk-metrics";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  StackContextManager,
  TracerProvider,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace";

/** A metric reader the test collects from on demand. */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** One data point of a metric: its attributes and value (a number for counters, a histogram's count/sum/buckets). */
export interface RecordedPoint {
  attributes: Attributes;
  value: unknown;
}

/** The OpenTelemetry SDK registered globally with in-memory exporters, as a test sees it. */
export interface InMemoryTelemetry {
  /** Every span ended so far, in the order they ended (after the pending exports). */
  spans(): Promise<ReadableSpan[]>;
  /** The ended spans named `name`. */
  spansNamed(name: string): Promise<ReadableSpan[]>;
  /** The data points of metric `name` now (cumulative), or [] when it has none. */
  points(name: string): Promise<RecordedPoint[]>;
  /** Forgets the spans so far (metrics are cumulative: compare against an earlier `points`). */
  resetSpans(): void;
  /** Unregisters the SDK (the API falls back to its no-ops). */
  stop(): Promise<void>;
}

/**
 * Registers an OpenTelemetry tracer provider (every span recorded, exported
 * to memory when it ends), a meter provider read on demand and a stack
 * context manager (`context.with` is active for the synchronous part of its
 * function), all global, as `agentd serve` does with telemetry on.
 */
export function registerInMemoryTelemetry(): InMemoryTelemetry {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(new StackContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans: async () => {
      await tracerProvider.forceFlush();
      return exporter.getFinishedSpans();
    },
    spansNamed: async (name) => {
      await tracerProvider.forceFlush();
      return exporter.getFinishedSpans().filter((span) => span.name === name);
    },
    points: async (name) => {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics
        .flatMap((scope) => scope.metrics)
        .find((m) => m.descriptor.name === name);
      const dataPoints: readonly DataPoint<unknown>[] = metric?.dataPoints ?? [];
      return dataPoints.map((point) => ({
        attributes: point.attributes,
        value: point.value,
      }));
    },
    resetSpans: () => exporter.reset(),
    stop: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}
