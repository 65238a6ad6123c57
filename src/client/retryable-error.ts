import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The codes Node.js and connect-node give a broken connection, whatever
 * status they end up mapped to (a reset becomes `Code.Aborted`, an HTTP/2
 * RST_STREAM `Code.Internal` or `Code.Canceled`, ...).
 */
const TRANSPORT_ERROR_CODE =
  /^(E(CONNRESET|CONNREFUSED|CONNABORTED|PIPE|HOSTUNREACH|NETUNREACH|TIMEDOUT|AI_AGAIN)|ERR_HTTP2_|ERR_STREAM_(DESTROYED|PREMATURE_CLOSE)|UND_ERR_(SOCKET|CLOSED))/;
/** connect-node's HTTP/2 stream reset, and what fetch (Node's and browsers') says of a broken connection. */
const TRANSPORT_MESSAGE =
  /http\/2 stream closed with error code|premature close|socket hang up|GOAWAY|fetch failed|Failed to fetch|NetworkError/i;

/** The status codes a transport failure can surface as, besides `Code.Unavailable`. */
const TRANSPORT_STATUS = new Set<Code>([Code.Canceled, Code.Unknown, Code.Internal, Code.Aborted]);

/**
 * The message of the error the client raises when a stream ended before the
 * output it was waiting for; such a stream is retried like a broken connection.
 */
export const INCOMPLETE_STREAM = "ended without an output";

/**
 * True when `err` is a failure of the connection rather than an answer of the
 * server: a Node.js network or HTTP/2 error anywhere in its cause chain, or
 * connect-node's message for an HTTP/2 stream reset.
 */
export function isTransportFailure(err: ConnectError): boolean {
  if (TRANSPORT_MESSAGE.test(err.rawMessage)) return true;
  const seen = new Set<unknown>();
  for (let e: unknown = err.cause; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && TRANSPORT_ERROR_CODE.test(code)) return true;
    if (TRANSPORT_MESSAGE.test(e.message)) return true;
  }
  return false;
}

/**
 * Whether a failed attempt may be retried: UNAVAILABLE, a transport failure
 * (as CANCELLED, UNKNOWN, INTERNAL or ABORTED), or a stream that ended before
 * its output; never when the caller's own `signal` is aborted, never
 * DEADLINE_EXCEEDED, never any other status the server answered.
 */
export function isRetryable(err: unknown, callerSignal?: AbortSignal): boolean {
  if (callerSignal?.aborted) return false;
  const error = ConnectError.from(err);
  if (error.code === Code.DeadlineExceeded) return false;
  if (error.code === Code.Unavailable) return true;
  if (error.code === Code.DataLoss && error.rawMessage.includes(INCOMPLETE_STREAM)) return true;
  return TRANSPORT_STATUS.has(error.code) && isTransportFailure(error);
}
