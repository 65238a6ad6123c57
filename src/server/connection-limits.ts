import type { Logger } from "pino";

/**
 * Per-connection timeouts and caps of the one-port listener (see
 * docs/server.md, "Limits"). Every path through the protocol sniffer is
 * bounded: a connection that never finishes its first bytes, its HTTP/1.1
 * request headers, or that sits idle with nothing in flight is closed.
 * Requests and streams in flight never count as idle, however quiet.
 */
export interface ConnectionLimits {
  /**
   * A new connection must have sent enough bytes to pick its protocol (any
   * byte that is not a prefix of the HTTP/2 preface, or the whole 24-byte
   * preface) within this many ms of being accepted; else it is destroyed.
   */
  firstBytesTimeoutMs: number;
  /**
   * HTTP/1.1: a request's headers must be complete this many ms after its
   * first byte (Node's `headersTimeout`; the client gets 408 and the socket
   * closes, checked every `min(1 s, timeout / 5)`).
   */
  headersTimeoutMs: number;
  /**
   * HTTP/1.1: a whole request (headers and body, not the response) must have
   * arrived within this many ms (Node's `requestTimeout`; never less than
   * `headersTimeoutMs`). Responses, e.g. long server streams, are not bounded.
   */
  requestTimeoutMs: number;
  /**
   * A connection with no request or stream in flight is closed after this
   * many ms: HTTP/1.1 keep-alive (Node's `keepAliveTimeout`, to which Node
   * adds its 1 s `keepAliveTimeoutBuffer`) and HTTP/2 sessions with no open
   * stream (GOAWAY, then close). Traffic without streams (PING, SETTINGS)
   * does not keep a session alive.
   */
  idleTimeoutMs: number;
  /**
   * An HTTP/2 session with a stream open gets a PING this often (ms); see
   * {@link ConnectionLimits.keepaliveTimeoutMs}.
   */
  keepaliveIntervalMs: number;
  /**
   * A PING not acknowledged within this many ms destroys its HTTP/2 session
   * and resets its streams: the calls of a client that vanished without
   * closing the connection end and free what they held.
   */
  keepaliveTimeoutMs: number;
  /** Open connections at most; connections over it are closed as soon as they are accepted. */
  maxConnections: number;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS advertised to clients (streams per connection). */
  maxConcurrentStreams: number;
}

/**
 * The defaults: a silent or trickling connection is gone within about 31 s,
 * an idle one within 60 s, and the streams of an HTTP/2 client that vanished
 * within 50 s.
 */
export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  firstBytesTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  requestTimeoutMs: 300_000,
  idleTimeoutMs: 60_000,
  keepaliveIntervalMs: 30_000,
  keepaliveTimeoutMs: 20_000,
  maxConnections: 1024,
  maxConcurrentStreams: 100,
});

/** `limits` with defaults filled in; throws a RangeError for values that are not positive integers. */
export function resolveConnectionLimits(limits: Partial<ConnectionLimits> = {}): ConnectionLimits {
  const resolved: ConnectionLimits = { ...DEFAULT_CONNECTION_LIMITS };
  for (const key of Object.keys(DEFAULT_CONNECTION_LIMITS) as (keyof ConnectionLimits)[]) {
    const value = limits[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`connection limit ${key} must be a positive integer, got ${value}`);
    resolved[key] = value;
  }
  resolved.requestTimeoutMs = Math.max(resolved.requestTimeoutMs, resolved.headersTimeoutMs);
  return resolved;
}

/** How often the rejected-connection warning may repeat. */
const REJECT_LOG_INTERVAL_MS = 10_000;

/**
 * A callback for {@link DualProtocolListenerOptions.onConnectionRejected}
 * that logs one warning for the first connection over `--max-connections`,
 * then at most one every 10 s with how many were closed since (and in total);
 * a burst's last ones are reported when its 10 s are up.
 */
export function rejectedConnectionLogger(logger: Logger, maxConnections: number): (total: number) => void {
  let lastLogAt = -Infinity;
  let loggedTotal = 0;
  let latestTotal = 0;
  let pending: NodeJS.Timeout | undefined;
  const log = (): void => {
    pending = undefined;
    lastLogAt = performance.now();
    logger.warn(
      { maxConnections, rejected: latestTotal - loggedTotal, rejectedTotal: latestTotal },
      "connections over --max-connections closed",
    );
    loggedTotal = latestTotal;
  };
  return (total) => {
    latestTotal = total;
    const wait = lastLogAt + REJECT_LOG_INTERVAL_MS - performance.now();
    if (wait <= 0) log();
    else pending ??= setTimeout(log, wait).unref();
  };
}
