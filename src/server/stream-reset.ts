import { constants, Http2ServerRequest } from "node:http2";
import type { IncomingMessage } from "node:http";

/**
 * Arranges for the HTTP/2 stream of `req` to be reset (RST_STREAM with
 * NO_ERROR, as RFC 9113 §8.1 allows once a response is complete) right after
 * its response, status and trailers included, was sent, if the client has
 * not closed its side by then. Without it, a client that stops reading after
 * the status keeps the stream open on both ends (Node.js frees its side of
 * the stream without telling the client), and with it one of the
 * connection's concurrent-stream slots, until the connection closes. HTTP/1.1
 * requests are left alone. Call it before the response is written.
 */
export function resetUnfinishedStream(req: IncomingMessage | Http2ServerRequest): void {
  if (!(req instanceof Http2ServerRequest)) return;
  const stream = req.stream;
  // The response's trailers are submitted by Node.js's own `wantTrailers` listener; the reset is queued after them.
  stream.once("wantTrailers", () =>
    setImmediate(() => {
      if (stream.closed || stream.destroyed || stream.state.remoteClose) return;
      stream.close(constants.NGHTTP2_NO_ERROR);
    }),
  );
}
