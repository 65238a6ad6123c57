import { Code, ConnectError, createContextKey, createContextValues, type ContextValues, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { statusForCode, toConnectError } from "./error-mapping.js";

/** IDs a handler attaches to its call so the per-RPC log line carries them. */
export interface CallLogFields {
  agent?: string;
  sessionId?: string;
  snapshotId?: string;
}

/** Per-call log context: transport facts plus handler-provided fields. */
export interface CallLogContext {
  /** "1.1" or "2.0", from the Node request. */
  httpVersion?: string;
  fields: CallLogFields;
}

/** Context key holding the call's {@link CallLogContext}; a fresh object per call. */
export const callLogKey = createContextKey<CallLogContext | undefined>(undefined, { description: "agentd call log" });

/** Creates the context values for one incoming request (used by the node adapter). */
export function createCallContextValues(httpVersion: string | undefined): ContextValues {
  return createContextValues().set(callLogKey, { httpVersion, fields: {} });
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
 * {@link toConnectError} (so AgentError statuses reach the client unchanged
 * and unexpected errors become a safe INTERNAL), and (2) writes exactly one
 * structured log line per RPC when it ends: procedure, protocol, HTTP
 * version, status code, duration in ms, and any IDs from {@link annotateCall}.
 * Streaming calls are logged when their response stream ends.
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
    const finish = (err?: ConnectError): void => {
      const line = {
        procedure,
        protocol,
        http: callLog.httpVersion,
        code: err ? statusForCode(err.code) : "OK",
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...callLog.fields,
        ...(err ? { error: err.rawMessage } : {}),
      };
      if (err && SERVER_FAULTS.has(err.code)) logger.error({ ...line, err: err.cause ?? err }, "rpc failed");
      else logger.info(line, "rpc");
    };
    let res;
    try {
      res = await next(req);
    } catch (err) {
      const mapped = toConnectError(err);
      finish(mapped);
      throw mapped;
    }
    if (!res.stream) {
      finish();
      return res;
    }
    const source = res.message;
    async function* logged() {
      let failed = false;
      try {
        yield* source;
      } catch (err) {
        failed = true;
        const mapped = toConnectError(err);
        finish(mapped);
        throw mapped;
      } finally {
        if (!failed) finish();
      }
    }
    return { ...res, message: logged() };
  };
}
