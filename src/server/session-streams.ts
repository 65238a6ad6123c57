import type * as http2 from "node:http2";

/** What {@link watchOpenStreams} reports: a session's streams going from none to some, and back. */
export interface StreamsListener {
  /** The session opened a stream while it had none open. */
  busy(): void;
  /** The session's last open stream closed. */
  idle(): void;
}

/**
 * Counts `session`'s open streams and tells `listener` when the count
 * leaves zero (`busy`) and comes back to it (`idle`). Returns whether a
 * stream is open now.
 */
export function watchOpenStreams(session: http2.ServerHttp2Session, listener: StreamsListener): () => boolean {
  let open = 0;
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    if (open++ === 0) listener.busy();
    stream.once("close", () => {
      if (--open === 0) listener.idle();
    });
  });
  return () => open > 0;
}
