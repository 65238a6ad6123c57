import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type ContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { trace, TraceFlags } from "@opentelemetry/api";
import type { Logger } from "pino";
import { deadlineError } from "./call-errors.js";
import { statusForCode } from "../protocol/status-codes.js";
import { toCallError } from "./error-mapping.js";
import { tapStream } from "../streams/stream-tap.js";

/** IDs a handler attaches to its call so the per-RPC log line carries them. */
export interface CallLogFields {
  /** The authenticated caller's subject and tenant (never a credential). */
  subject?: string;
  tenant?: string;
  agent?: string;
  sessionId?: string;
  snapshotId?: string;
}

/** Per-call log context: transport facts plus handler-provided fields. */
export interface CallLogContext {
  /** "1.1" or "2.0", from the Node request. */
  httpVersion?: string;
  fields: CallLogFields;
  /** Set once the call reached the logging interceptor (which then writes its line). */
  intercepted?: boolean;
  /** How a call that never reached the interceptor ended, when known (set by the request gate). */
  outcome?: { code: string; error: string };
}

/** Context key holding the call's {@link CallLogContext}; a fresh object per call. */
export const callLogKey = createContextKey<CallLogContext | undefined>(undefined, { description: "agentd call log" });

/** Creates the context values for one incoming request (used by the node adapter), and its log context. */
export function createCallContext(httpVersion: string | undefined): { values: ContextValues; log: CallLogContext } {
  const log: CallLogContext = { httpVersion, fields: {} };
  return { values: createContextValues().set(callLogKey, log), log };
}

/** HTTP statuses a Connect server sends for exactly one code, mapped to that code's name. */
const CODE_BY_CONNECT_HTTP_STATUS: ReadonlyMap<number, string> = (() => {
  const byStatus = new Map<number, Code[]>();
  for (const value of Object.values(Code)) {
    if (typeof value !== "number") continue;
    const status = codeToHttpStatus(value);
    byStatus.set(status, [...(byStatus.get(status) ?? []), value]);
  }
  const unique = new Map<number, string>([[200, "OK"]]);
  for (const [status, codes] of byStatus) if (codes.length === 1) unique.set(status, statusForCode(codes[0]));
  return unique;
})();

/**
 * Writes the RPC line for a request that ended without reaching the logging
 * interceptor (oversized or malformed request, unknown procedure, bad
 * content type): procedure, protocol, HTTP status, and the code when the
 * protocol puts it in the HTTP status (Connect).
 */
export function logRejectedRequest(
  logger: Logger,
  request: { url?: string; httpVersion?: string; headers: Record<string, string | string[] | undefined> },
  statusCode: number,
  durationMs: number,
  outcome?: { code: string; error: string },
): void {
  const contentType = request.headers["content-type"];
  const protocol = protocolOf(typeof contentType === "string" ? contentType : null);
  logger.info(
    {
      procedure: (request.url ?? "").split("?")[0],
      protocol,
      http: request.httpVersion,
      httpStatus: statusCode,
      ...(outcome
        ? outcome
        : protocol === "connect" && CODE_BY_CONNECT_HTTP_STATUS.has(statusCode)
          ? { code: CODE_BY_CONNECT_HTTP_STATUS.get(statusCode) }
          : {}),
      durationMs: Math.round(durationMs * 10) / 10,
    },
    "rpc rejected before its handler",
  );
}

/**
 * Attaches agent / session / snapshot IDs to the current call; later calls
 * overwrite earlier values. Safe to call from any handler, any number of times.
 */
export function annotateCall(ctx: { values: ContextValues }, fields: CallLogFields): void {
  let log = ctx.values.get(callLogKey);
  if (!log) {
    log = { fields: {} };
    ctx.values.set(callLogKey, log);
  }
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && value !== "") (log.fields as Record<string, unknown>)[key] = value;
  }
}

/** "grpc", "grpc-web" or "connect", from the request's content type. */
export function protocolOf(contentType: string | null): string {
  if (!contentType) return "connect";
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return "grpc";
  return "connect";
}

const SERVER_FAULTS = new Set<Code>([Code.Internal, Code.Unknown, Code.DataLoss]);

/**
 * An interceptor that (1) maps every error a handler throws through
 * {@link toCallError} (so AgentError statuses reach the client unchanged,
 * passed deadlines are DEADLINE_EXCEEDED, undecodable requests
 * INVALID_ARGUMENT, clients that went away CANCELLED, and unexpected errors
 * become a safe INTERNAL), and (2) writes exactly one
 * structured log line per RPC when it ends: procedure, protocol, HTTP
 * version, status code, duration in ms, any IDs from {@link annotateCall},
 * and `traceId` when the call is in a sampled OpenTelemetry trace (telemetry on).
 * Streaming calls are logged when their response stream ends. Only server
 * faults (INTERNAL, UNKNOWN, DATA_LOSS) are logged at error level, with the
 * cause; client faults, cancellations and deadlines are info lines.
 */
export function loggingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    let log = req.contextValues.get(callLogKey);
    if (!log) {
      log = { fields: {} };
      req.contextValues.set(callLogKey, log);
    }
    const callLog = log;
    const procedure = `/${req.service.typeName}/${req.method.name}`;
    const protocol = protocolOf(req.header.get("content-type"));
    const spanContext = trace.getActiveSpan()?.spanContext();
    const traceId = spanContext && spanContext.traceFlags & TraceFlags.SAMPLED ? spanContext.traceId : undefined;
    callLog.intercepted = true;
    const finish = (err?: ConnectError): void => {
      const line = {
        procedure,
        protocol,
        http: callLog.httpVersion,
        code: err ? statusForCode(err.code) : "OK",
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...callLog.fields,
        ...(traceId ? { traceId } : {}),
        ...(err ? { error: err.rawMessage } : {}),
      };
      if (err && SERVER_FAULTS.has(err.code)) logger.error({ ...line, err: err.cause ?? err }, "rpc failed");
      else logger.info(line, "rpc");
    };
    let res;
    try {
      const expired = deadlineError(req.signal);
      if (expired) throw expired;
      res = await next(req);
    } catch (err) {
      const mapped = toCallError(err, req.signal);
      finish(mapped);
      throw mapped;
    }
    if (!res.stream) {
      finish();
      return res;
    }
    const message = tapStream(res.message, {
      error: (err) => toCallError(err, req.signal),
      end: (err) => finish(err as ConnectError | undefined),
    });
    return { ...res, message };
  };
}
