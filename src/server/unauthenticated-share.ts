import type { Socket } from "node:net";
import { Code, ConnectError, createContextKey } from "@connectrpc/connect";
import { resourceExhausted } from "./retry-info.js";

/** What callers without credentials may hold on a server with authentication. */
export interface UnauthenticatedShareOptions {
  /**
   * Connections that have not carried an authenticated call, at most: when
   * one more is accepted, the oldest of them is closed. The rest of
   * `--max-connections` stays free for callers with credentials.
   */
  maxConnections: number;
  /** Calls without credentials (health checks, open reflection) in flight at once, over every connection. */
  maxStreams: number;
  /** A streaming call without credentials (`Health/Watch`) ends UNAVAILABLE after this many ms. */
  streamTimeoutMs: number;
}

/** The defaults, given `--max-connections`: half of it for both caps, one minute per stream. */
export function defaultUnauthenticatedShare(maxConnections: number): UnauthenticatedShareOptions {
  const half = Math.max(1, Math.floor(maxConnections / 2));
  return { maxConnections: half, maxStreams: half, streamTimeoutMs: 60_000 };
}

const kShare = Symbol("agentd.unauthenticatedShare");

/** Context key of the socket a call came on (the server sets it per request). */
export const connectionSocketKey = createContextKey<Socket | undefined>(undefined, {
  description: "agentd connection socket",
});

/** The mark an accepted connection carries: whether it has carried an authenticated call. */
interface ConnectionMark {
  authenticated: boolean;
  readonly socket: Socket;
}

type MarkedSocket = Socket & { [kShare]?: ConnectionMark };

/**
 * Keeps callers without credentials to their share of the server: they hold
 * at most `maxConnections` connections (a new one closes the oldest
 * connection that never carried an authenticated call, so a tenant's new
 * connection always gets in and keeps its place once it authenticates) and
 * `maxStreams` calls, each streaming one for at most `streamTimeoutMs`.
 */
export class UnauthenticatedShare {
  /** Connections without an authenticated call yet, oldest first. */
  private readonly pending = new Set<ConnectionMark>();
  private streams = 0;

  constructor(readonly options: Readonly<UnauthenticatedShareOptions>) {}

  /** Marks an accepted connection as unauthenticated, closing the oldest unauthenticated one over the cap. */
  accepted(socket: Socket): void {
    const mark: ConnectionMark = { authenticated: false, socket };
    (socket as MarkedSocket)[kShare] = mark;
    this.pending.add(mark);
    socket.once("close", () => this.pending.delete(mark));
    if (this.pending.size > this.options.maxConnections) {
      const oldest = this.pending.values().next().value!;
      this.pending.delete(oldest);
      oldest.socket.destroy();
    }
  }

  /** Gives `routed` (the TLS socket of an accepted one) the accepted socket's mark. */
  route(accepted: Socket, routed: Socket): void {
    const mark = (accepted as MarkedSocket)[kShare];
    if (mark) (routed as MarkedSocket)[kShare] = mark;
  }

  /**
   * Records that a call on `socket` (a request's socket, or HTTP/2 session's
   * socket proxy) authenticated: its connection no longer counts as unauthenticated.
   */
  authenticated(socket: Socket | undefined): void {
    const mark = socket ? (socket as MarkedSocket)[kShare] : undefined;
    if (!mark || mark.authenticated) return;
    mark.authenticated = true;
    this.pending.delete(mark);
  }

  /** Connections that have not carried an authenticated call. */
  get unauthenticatedConnections(): number {
    return this.pending.size;
  }

  /**
   * Admits one call without credentials: the error to fail it with when
   * `maxStreams` are in flight, else the function to call once when it ends.
   */
  admitCall(): ConnectError | (() => void) {
    if (this.streams >= this.options.maxStreams) {
      return resourceExhausted(
        `${this.streams} calls without credentials are already in flight (at most ${this.options.maxStreams}); calls with credentials are not limited by this`,
        1000,
      );
    }
    this.streams++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.streams--;
    };
  }

  /** `source` ended UNAVAILABLE once `streamTimeoutMs` have passed (the source is then abandoned to its call's signal). */
  bound<T>(source: AsyncIterable<T>): AsyncIterable<T> {
    const timeoutMs = this.options.streamTimeoutMs;
    return {
      [Symbol.asyncIterator](): AsyncIterator<T> {
        const inner = source[Symbol.asyncIterator]();
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new ConnectError(
                  `a streaming call without credentials lasts at most ${timeoutMs} ms: call again (or authenticate)`,
                  Code.Unavailable,
                ),
              ),
            timeoutMs,
          );
          timer.unref();
        });
        expired.catch(() => undefined);
        const stop = (): void => clearTimeout(timer);
        return {
          next: () =>
            Promise.race([inner.next(), expired]).then(
              (result) => {
                if (result.done) stop();
                return result;
              },
              (err: unknown) => {
                stop();
                void inner.return?.().catch(() => undefined);
                throw err;
              },
            ),
          return: (value?: unknown) => {
            stop();
            return inner.return ? inner.return(value) : Promise.resolve({ done: true, value: undefined as T });
          },
        };
      },
    };
  }
}
