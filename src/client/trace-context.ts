import type { Interceptor } from "@connectrpc/connect";
import { context, propagation, type TextMapSetter } from "@opentelemetry/api";

/** Writes propagation fields (`traceparent`, `tracestate`, `baggage`) into the request's Headers. */
const HEADERS_SETTER: TextMapSetter<Headers> = {
  set: (headers, key, value) => headers.set(key, value),
};

/**
 * A Connect interceptor that puts the active OpenTelemetry trace context on
 * every call (`propagation.inject` of `@opentelemetry/api` into the request
 * metadata: W3C `traceparent` / `tracestate` with the SDK's default
 * propagator), so agentd's spans join the caller's trace. Without an
 * OpenTelemetry SDK in the calling process it sends nothing.
 *
 * ```ts
 * const client = createAgentClient(url, { protocol: "grpc", interceptors: [traceContextInterceptor()] });
 * await tracer.startActiveSpan("checkout", async (span) => { await client.run("assistant", "hi"); span.end(); });
 * ```
 */
export function traceContextInterceptor(): Interceptor {
  return (next) => (req) => {
    propagation.inject(context.active(), req.header, HEADERS_SETTER);
    return next(req);
  };
}
