import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
} from "@opentelemetry/api";
import { statusForCode } from "../protocol/status-codes.js";
import { agentdInstruments, agentdTracer } from "../runtime/telemetry/telemetry.js";
import * as names from "../runtime/telemetry/telemetry-names.js";
import { callLogKey, protocolOf, type CallLogFields } from "./call-log.js";

/** Reads W3C trace context (`traceparent`, `tracestate`, `baggage`) from the request's Headers. */
const HEADERS_GETTER: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/** Codes a server span is marked ERROR for (the gRPC conventions: server faults, not the caller's mistakes). */
const SERVER_ERROR_CODES = new Set<Code>([
  Code.Unknown,
  Code.DeadlineExceeded,
  Code.Unimplemented,
  Code.Internal,
  Code.Unavailable,
  Code.DataLoss,
]);

/**
 * An interceptor (put it first, outside the error mapping of the logging
 * interceptor) that gives every RPC a server span, following the OpenTelemetry
 * RPC conventions, and its metrics:
 *
 * - the caller's trace context is read from the request metadata (the
 *   registered propagator: W3C `traceparent` / `tracestate` by default), so
 *   the span joins the caller's trace;
 * - span `agentd.v1.AgentService/Run` (kind SERVER) with `rpc.system`
 *   (`grpc` for gRPC and gRPC-Web, `connect_rpc` for Connect) and
 *   `rpc.system.name`, `rpc.service`, `rpc.method`, `rpc.status_code` (the
 *   code name), `rpc.grpc.status_code` (gRPC, gRPC-Web) or
 *   `rpc.connect_rpc.error_code` (Connect errors), `error.type` on failure,
 *   and the agent / session / snapshot IDs the handler annotated; status
 *   ERROR (with an exception event) for server faults;
 * - the handler runs with the span active (streams too: each message is
 *   produced in its context), so turn, model, tool and store spans are its
 *   children;
 * - `rpc.server.call.duration` (seconds; by system, service, method and code)
 *   when the call ends, and `agentd.streams.open` while a streaming response
 *   is open.
 */
export function telemetryInterceptor(): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const system =
      protocolOf(req.header.get("content-type")) === "connect" ? names.RPC_SYSTEM_CONNECT_RPC : names.RPC_SYSTEM_GRPC;
    const metricAttributes = {
      [names.ATTR_RPC_SYSTEM]: system,
      [names.ATTR_RPC_SERVICE]: req.service.typeName,
      [names.ATTR_RPC_METHOD]: req.method.name,
    };
    const parent = propagation.extract(ROOT_CONTEXT, req.header, HEADERS_GETTER);
    const span = agentdTracer().startSpan(
      `${req.service.typeName}/${req.method.name}`,
      { kind: SpanKind.SERVER, attributes: { ...metricAttributes, [names.ATTR_RPC_SYSTEM_NAME]: system } },
      parent,
    );
    const active = trace.setSpan(parent, span);
    let ended = false;
    const end = (err?: unknown): void => {
      if (ended) return;
      ended = true;
      const code = err === undefined ? undefined : ConnectError.from(err).code;
      const statusCode = code === undefined ? "OK" : statusForCode(code);
      finishSpan(span, system, code, err, req.contextValues.get(callLogKey)?.fields);
      agentdInstruments().rpcServerCallDuration.record((performance.now() - started) / 1000, {
        ...metricAttributes,
        [names.ATTR_RPC_STATUS_CODE]: statusCode,
      });
    };
    let res;
    try {
      res = await context.with(active, () => next(req));
    } catch (err) {
      end(err);
      throw err;
    }
    if (!res.stream) {
      end();
      return res;
    }
    const streams = agentdInstruments().streamsOpen;
    const streamAttributes = { [names.ATTR_RPC_METHOD]: req.method.name };
    streams.add(1, streamAttributes);
    return {
      ...res,
      message: inContext(res.message, active, (err) => {
        streams.add(-1, streamAttributes);
        end(err);
      }),
    };
  };
}

/** Sets the outcome attributes and status on an RPC span and ends it. */
function finishSpan(
  span: Span,
  system: string,
  code: Code | undefined,
  err: unknown,
  ids: CallLogFields | undefined,
): void {
  if (!span.isRecording()) return span.end();
  span.setAttribute(names.ATTR_RPC_STATUS_CODE, code === undefined ? "OK" : statusForCode(code));
  if (system === names.RPC_SYSTEM_GRPC) span.setAttribute(names.ATTR_RPC_GRPC_STATUS_CODE, code ?? 0);
  else if (code !== undefined) span.setAttribute(names.ATTR_RPC_CONNECT_RPC_ERROR_CODE, codeToString(code));
  if (ids?.agent) span.setAttribute(names.ATTR_AGENT, ids.agent);
  if (ids?.sessionId) span.setAttribute(names.ATTR_SESSION_ID, ids.sessionId);
  if (ids?.snapshotId) span.setAttribute(names.ATTR_SNAPSHOT_ID, ids.snapshotId);
  if (code !== undefined) {
    span.setAttribute(names.ATTR_ERROR_TYPE, statusForCode(code));
    if (SERVER_ERROR_CODES.has(code)) {
      const error = ConnectError.from(err);
      span.recordException({ name: statusForCode(code), message: error.rawMessage });
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.rawMessage });
    }
  }
  span.end();
}

/**
 * `source` with every step (`next`, and `return` when the consumer stops
 * early) run in `ctx`, calling `done` once when it ends (with the error it
 * failed with, if any).
 */
async function* inContext<T>(source: AsyncIterable<T>, ctx: Context, done: (err?: unknown) => void): AsyncGenerator<T> {
  const iterator = context.with(ctx, () => source[Symbol.asyncIterator]());
  let finished = false;
  try {
    for (;;) {
      const step = await context.with(ctx, () => iterator.next());
      if (step.done) break;
      yield step.value;
    }
    finished = true;
    done();
  } catch (err) {
    finished = true;
    done(err);
    throw err;
  } finally {
    if (!finished) {
      // The consumer stopped early (the client went away): end the source in context too.
      try {
        await context.with(ctx, async () => iterator.return?.());
        done(new ConnectError("the client went away", Code.Canceled));
      } catch (err) {
        done(err);
      }
    }
  }
}
