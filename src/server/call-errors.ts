import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Classification of the errors a call can end with that are not the
 * handler's own: undecodable requests (a client fault connect-es raises as
 * INTERNAL), clients that went away mid-call, and passed deadlines. Used by
 * the request gate (before the body is read) and the interceptors.
 */

/** Echoed client input (IDs, names) longer than this is cut in error messages. */
export const MAX_ECHO_CHARS = 200;

/** Longest error message sent to a client (after echoed input was cut). */
export const MAX_ERROR_MESSAGE_CHARS = 1024;

/** `text` cut to `max` characters plus "…(N chars)" when longer. */
export function truncateEcho(text: string, max = MAX_ECHO_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}…(${text.length} chars)`;
}

const LONG_RUN = new RegExp(`[^\\s"'\`]{${MAX_ECHO_CHARS + 1},}`, "g");

/**
 * An error message safe to send: every run of more than {@link MAX_ECHO_CHARS}
 * non-blank characters (an echoed ID, name or value) is cut with
 * {@link truncateEcho}, and the whole message is capped at
 * {@link MAX_ERROR_MESSAGE_CHARS}.
 */
export function shortenMessage(message: string): string {
  const cut = message.length > MAX_ECHO_CHARS ? message.replace(LONG_RUN, (run) => truncateEcho(run)) : message;
  return truncateEcho(cut, MAX_ERROR_MESSAGE_CHARS);
}

/** A JSON-like value with every string cut by {@link truncateEcho} (for error details). */
export function shortenDetails(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return truncateEcho(value);
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => shortenDetails(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [truncateEcho(k), shortenDetails(v, depth + 1)]));
}

/**
 * True for the errors connect-es raises, as INTERNAL, when the request bytes
 * cannot be decoded (bad protobuf, invalid UTF-8, a compressed flag without
 * an encoding): all client faults.
 */
export function isDecodeError(err: unknown): err is ConnectError {
  if (!(err instanceof ConnectError) || err.code !== Code.Internal) return false;
  return (
    err.rawMessage.startsWith("parse binary:") ||
    err.rawMessage === "received compressed envelope, but do not know how to decompress"
  );
}

/** The INVALID_ARGUMENT error for an undecodable request (see {@link isDecodeError}). */
export function decodeError(err: ConnectError): ConnectError {
  const reason = err.rawMessage.replace(/^parse binary: /, "");
  return new ConnectError(
    shortenMessage(`the request message could not be decoded: ${reason}`),
    Code.InvalidArgument,
    undefined,
    undefined,
    err,
  );
}

/**
 * Rewrites an undecodable-request error in place as INVALID_ARGUMENT. For
 * unary calls connect-es decodes the request before any interceptor runs and
 * serialises the very error object it aborted the call with, so changing that
 * object (from an abort listener) is the only way to change the status.
 */
export function reclassifyDecodeErrorInPlace(err: ConnectError): void {
  const fixed = decodeError(err);
  Object.assign(err as { code: Code; rawMessage: string; message: string }, {
    code: fixed.code,
    rawMessage: fixed.rawMessage,
    message: fixed.message,
  });
}

/** Node error codes of writes/reads on a stream the client already closed or reset. */
const CLIENT_GONE_CODES = new Set([
  "ECANCELED",
  "ECONNRESET",
  "EPIPE",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_WRITE_AFTER_END",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_HTTP2_INVALID_STREAM",
  "ERR_HTTP2_STREAM_CANCEL",
  "ERR_HTTP2_STREAM_ERROR",
]);

/** True when `err` (or an error in its cause chain) says the client closed, reset or dropped the call. */
export function isClientGoneError(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; e instanceof Error && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && CLIENT_GONE_CODES.has(code)) return true;
    if (e.message === "aborted") return true;
  }
  return false;
}

/** The CANCELLED error for a client that went away mid-call. */
export function clientGoneError(cause: unknown): ConnectError {
  return new ConnectError("the client cancelled the call or went away", Code.Canceled, undefined, undefined, cause);
}

/** DEADLINE_EXCEEDED when `signal` was aborted because the call's deadline (grpc-timeout, connect-timeout-ms) passed. */
export function deadlineError(signal: AbortSignal | undefined): ConnectError | undefined {
  if (!signal?.aborted) return undefined;
  const reason: unknown = signal.reason;
  if (!(reason instanceof ConnectError) || reason.code !== Code.DeadlineExceeded) return undefined;
  return new ConnectError(
    "the call's deadline passed before it finished",
    Code.DeadlineExceeded,
    undefined,
    undefined,
    reason,
  );
}

/** Largest delay Node timers honour; longer ones fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const GRPC_TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Removes a request deadline too far away for a Node timer (about 24.8 days:
 * `grpc-timeout: 597H` and more, or a `connect-timeout-ms` over 2^31-1), which
 * connect-es would otherwise arm as a 1 ms timer; such a call has no
 * practical deadline. Malformed values are left for connect-es to reject.
 */
export function dropUnreachableDeadline(headers: Record<string, string | string[] | undefined>): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string") {
    const m = /^(\d{1,8})([HMSmun])$/.exec(grpc);
    if (m && Number(m[1]) * GRPC_TIMEOUT_UNIT_MS[m[2]] > MAX_TIMER_MS) delete headers["grpc-timeout"];
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS)
    delete headers["connect-timeout-ms"];
}
