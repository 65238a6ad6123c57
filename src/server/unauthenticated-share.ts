import type { Socket } from "node:net";
import { Code, ConnectError, createContextKey } from "@connectrpc/connect";
import { resourceExhausted } from "./retry-info.js";
import { endedBy } from "./ended-by.js";

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
  /**
   * Connections one tenant may hold (those whose first authenticated call
   * was the tenant's), at most; 0 = no cap. A call of a tenant at its cap on
   * a new connection is refused RESOURCE_EXHAUSTED and its connection stays
   * unauthenticated (the first to be closed), so one tenant cannot take the
   * server's last connections.
   */
  maxTenantConnections: number;
}

/**
 * The defaults, given `--max-connections`: half of it for unauthenticated
 * connections and calls, a quarter per tenant, one minute per stream.
 */
export function defaultUnauthenticatedShare(maxConnections: number): UnauthenticatedShareOptions {
  const half = Math.max(1, Math.floor(maxConnections / 2));
  const quarter = Math.max(1, Math.floor(maxConnections / 4));
  return { maxConnections: half, maxStreams: half, streamTimeoutMs: 60_000, maxTenantConnections: quarter };
}

const kShare = Symbol("agentd.unauthenticatedShare");

/** Context key of the socket a call came on (the server sets it per request). */
export const connectionSocketKey = createContextKey<Socket | undefined>(undefined, {
  description: "agentd connection socket",
});

/** The mark an accepted connection carries: whether it has carried an authenticated call, and whose. */
interface ConnectionMark {
  authenticated: boolean;
  /** The tenant of its first admitted authenticated call. */
  tenant?: string;
  readonly socket: Socket;
}

type MarkedSocket = Socket & { [kShare]?: ConnectionMark };

function markOf(socket: Socket | undefined): ConnectionMark | undefined {
  return socket ? (socket as MarkedSocket)[kShare] : undefined;
}

/**
 * Keeps callers without credentials to their share of the server, and each
 * tenant to its share of the connections: callers without credentials hold
 * at most `maxConnections` connections (a new one closes the oldest
 * connection that never carried an admitted authenticated call, first those
 * whose calls were refused, so a tenant's new connection always gets in and
 * keeps its place once it authenticates) and `maxStreams` calls, each
 * streaming one for at most `streamTimeoutMs`; a tenant holds at most
 * `maxTenantConnections` authenticated connections. A closed connection
 * stops counting at once.
 */
export class UnauthenticatedShare {
  /** Connections without an admitted authenticated call yet, oldest first. */
  private readonly pending = new Set<ConnectionMark>();
  /** Of those, the ones a call was refused on (over a tenant's limits), oldest first: closed first. */
  private readonly refused = new Set<ConnectionMark>();
  /** Authenticated connections per tenant. */
  private readonly tenantConnections = new Map<string, number>();
  private streams = 0;

  constructor(readonly options: Readonly<UnauthenticatedShareOptions>) {}

  /** Marks an accepted connection as unauthenticated, closing the oldest unauthenticated one over the cap. */
  accepted(socket: Socket): void {
    const mark: ConnectionMark = { authenticated: false, socket };
    (socket as MarkedSocket)[kShare] = mark;
    this.pending.add(mark);
    socket.once("close", () => this.forget(mark));
    if (this.pending.size > this.options.maxConnections) {
      const victim = this.refused.values().next().value ?? this.pending.values().next().value!;
      this.forget(victim);
      victim.socket.destroy();
    }
  }

  /** Stops counting `mark`'s connection (closed or being closed); idempotent. */
  private forget(mark: ConnectionMark): void {
    this.pending.delete(mark);
    this.refused.delete(mark);
    if (mark.tenant === undefined) return;
    const held = (this.tenantConnections.get(mark.tenant) ?? 1) - 1;
    if (held > 0) this.tenantConnections.set(mark.tenant, held);
    else this.tenantConnections.delete(mark.tenant);
    mark.tenant = undefined;
  }

  /**
   * Why a call of `tenant` may not authenticate the connection of `socket`:
   * the RESOURCE_EXHAUSTED error when the connection is not yet the
   * tenant's and the tenant already holds `maxTenantConnections`
   * connections (the connection is then among the first to be closed);
   * undefined when it may (or already did, or the socket is unknown).
   */
  connectionRefusal(socket: Socket | undefined, tenant: string): ConnectError | undefined {
    const mark = markOf(socket);
    const max = this.options.maxTenantConnections;
    if (!mark || mark.authenticated || max <= 0) return undefined;
    const held = this.tenantConnections.get(tenant) ?? 0;
    if (held < max) return undefined;
    this.refusedOn(socket);
    return resourceExhausted(
      `tenant "${tenant}" already holds ${held} connections (at most ${max}, --tenant-max-connections): send its calls over the connections it has`,
      1000,
    );
  }

  /** Records that a call on `socket` was refused (a tenant over its limits): while unauthenticated, its connection is among the first closed. */
  refusedOn(socket: Socket | undefined): void {
    const mark = markOf(socket);
    if (mark && !mark.authenticated) this.refused.add(mark);
  }

  /** Gives `routed` (the TLS socket of an accepted one) the accepted socket's mark. */
  route(accepted: Socket, routed: Socket): void {
    const mark = (accepted as MarkedSocket)[kShare];
    if (mark) (routed as MarkedSocket)[kShare] = mark;
  }

  /**
   * Records that a call of `tenant` on `socket` (a request's socket, or
   * HTTP/2 session's socket proxy) was admitted: its connection no longer
   * counts as unauthenticated, and counts as `tenant`'s (if it was not
   * already some tenant's) until it closes.
   */
  authenticated(socket: Socket | undefined, tenant: string): void {
    const mark = markOf(socket);
    if (!mark || mark.authenticated || mark.socket.destroyed) return;
    mark.authenticated = true;
    this.pending.delete(mark);
    this.refused.delete(mark);
    mark.tenant = tenant;
    this.tenantConnections.set(tenant, (this.tenantConnections.get(tenant) ?? 0) + 1);
  }

  /** Authenticated connections `tenant` holds. */
  connectionsOf(tenant: string): number {
    return this.tenantConnections.get(tenant) ?? 0;
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
        return endedBy(inner, expired, () => clearTimeout(timer));
      },
    };
  }
}
