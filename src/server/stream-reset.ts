import { constants, Http2ServerRequest, type Http2Session, type ServerHttp2Stream } from "node:http2";
import type { IncomingMessage } from "node:http";

/**
 * How long a client gets, after the response (status and trailers included)
 * was sent, to read it and close its side of the HTTP/2 stream before the
 * server resets the stream. A reset that reaches a client before it read the
 * status replaces the status with a transport error (`Premature close`),
 * which a client takes for a dropped connection: so the reset waits.
 */
export const LINGER_GRACE_MS = 5_000;

/**
 * The share of a connection's concurrent-stream slots that ended streams
 * whose client keeps its side open may hold before the oldest of them is
 * reset at once (before its grace ran out), so that such a client never runs
 * out of slots for new calls.
 */
const LINGER_SHARE = 0.5;

/** Per HTTP/2 session: its ended streams the client has not closed yet, oldest first. */
const lingering = new WeakMap<Http2Session, Set<ServerHttp2Stream>>();

/**
 * Arranges for the HTTP/2 stream of `req` to be reset (RST_STREAM with
 * NO_ERROR, as RFC 9113 §8.1 allows once a response is complete) when its
 * client has not closed its side {@link LINGER_GRACE_MS} after the response,
 * status and trailers included, was sent; earlier only when the connection's
 * ended-but-open streams reach half of its concurrent-stream limit (then the
 * oldest go first, having had the most time to read their status). Without
 * it, a client that stops reading after the status keeps the stream open on
 * both ends (Node.js frees its side of the stream without telling the
 * client), and with it one of the connection's concurrent-stream slots, until
 * the connection closes. A client that reads its status in time always gets
 * it, never a reset in its place. HTTP/1.1 requests are left alone. Call it
 * before the response is written.
 */
export function resetUnfinishedStream(req: IncomingMessage | Http2ServerRequest): void {
  if (!(req instanceof Http2ServerRequest)) return;
  const stream = req.stream;
  // Node.js's own `wantTrailers` listener submits the trailers; the stream lingers from the next tick.
  stream.once("wantTrailers", () => setImmediate(() => linger(stream)));
}

function linger(stream: ServerHttp2Stream): void {
  if (stream.closed || stream.destroyed || stream.state.remoteClose) return;
  const session = stream.session;
  if (!session) return;
  let streams = lingering.get(session);
  if (!streams) lingering.set(session, (streams = new Set()));
  streams.add(stream);
  const timer = setTimeout(() => reset(stream), LINGER_GRACE_MS);
  timer.unref();
  stream.once("close", () => {
    clearTimeout(timer);
    streams.delete(stream);
  });
  const limit = session.localSettings.maxConcurrentStreams ?? 100;
  const allowed = Math.max(1, Math.floor(limit * LINGER_SHARE));
  for (const oldest of streams) {
    if (streams.size <= allowed) break;
    reset(oldest);
  }
}

function reset(stream: ServerHttp2Stream): void {
  if (stream.session) lingering.get(stream.session)?.delete(stream);
  if (stream.closed || stream.destroyed) return;
  stream.close(constants.NGHTTP2_NO_ERROR);
}
