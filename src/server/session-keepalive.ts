import type * as http2 from "node:http2";
import { watchOpenStreams } from "./session-streams.js";

/**
 * Keeps watch on an HTTP/2 session while it has streams open: every
 * `intervalMs` it sends a PING, and a PING not acknowledged within
 * `timeoutMs` destroys the session (its streams are reset, so their calls
 * end and free what they held: a Chat's session lease, its invocation).
 * This is how a call whose client vanished without closing its connection
 * (a crashed host, a dropped network path: no FIN, no RST) ends; an open
 * stream otherwise keeps a session forever, however quiet, since the idle
 * timeout counts only sessions without streams. Every HTTP/2 client
 * acknowledges PINGs by itself (gRPC, Connect, browsers), so a live client
 * is never cut, however long it stays silent. A session without open
 * streams is not pinged (the idle timeout closes it).
 */
export function pingWhileStreaming(session: http2.ServerHttp2Session, intervalMs: number, timeoutMs: number): void {
  let interval: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  const stop = (): void => {
    clearInterval(interval);
    clearTimeout(deadline);
    interval = deadline = undefined;
  };
  const ping = (): void => {
    if (deadline || session.closed || session.destroyed) return; // the last PING is still unanswered
    const sent = session.ping((err) => {
      if (err) return; // the session ended meanwhile
      clearTimeout(deadline);
      deadline = undefined;
    });
    if (!sent) return; // too many PINGs in flight: try again at the next interval
    const timer = setTimeout(() => {
      // An acknowledgement already read off the socket (a stalled process wakes to timers first) is
      // processed by the event loop's poll phase, which runs before this check-phase callback.
      setImmediate(() => {
        if (deadline === timer) session.destroy();
      });
    }, timeoutMs).unref();
    deadline = timer;
  };
  watchOpenStreams(session, { busy: () => (interval = setInterval(ping, intervalMs).unref()), idle: stop });
  session.once("close", stop);
}
