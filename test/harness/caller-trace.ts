/**
 * A trace context in the test process, as an instrumented caller has one:
 * the OpenTelemetry Node SDK registered with nothing to export (its context
 * manager and W3C propagator are what the client's `traceContextInterceptor`
 * needs), and a fresh sampled span context per call of {@link callerSpan}.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { context, metrics, propagation, ROOT_CONTEXT, trace, TraceFlags, type Context } from "@opentelemetry/api";
import { startNodeSdk } from "@opentelemetry/sdk-node";

/** A caller's span: its IDs, its context, and its W3C `traceparent` value. */
export interface CallerSpan {
  traceId: string;
  spanId: string;
  context: Context;
  traceparent: string;
}

/** Registers the SDK's context manager and propagator; the returned function undoes it. */
export function registerCallerTracing(): () => Promise<void> {
  const sdk = startNodeSdk({
    spanProcessors: [],
    metricReaders: [],
    logRecordProcessors: [],
    resourceDetectors: [],
    logLevel: "none",
  });
  return async () => {
    await sdk.shutdown();
    context.disable();
    propagation.disable();
    trace.disable();
    metrics.disable();
  };
}

/** A new sampled span context, as the active span of a caller that starts a trace. */
export function callerSpan(): CallerSpan {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: false });
  return { traceId, spanId, context: ctx, traceparent: `00-${traceId}-${spanId}-01` };
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}
