import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import { resolveConnectionLimits, type ConnectionLimits } from "./connection-limits.js";
import { pingWhileStreaming } from "./session-keepalive.js";
import { watchOpenStreams } from "./session-streams.js";
import type { UnauthenticatedShare } from "./unauthenticated-share.js";

/** A request listener usable by both `http` and `http2` servers (what connectNodeAdapter returns). */
export type NodeHandlerFn = ReturnType<typeof connectNodeAdapter>;

/** How long closing connections may take to flush after the last request ended. */
const SETTLE_MS = 1000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** Options for {@link listenDualProtocol}. */
export interface DualProtocolListenerOptions {
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** TCP port; 0 picks a free port. */
  port: number;
  /** The request handler shared by the HTTP/2 and HTTP/1.1 servers. */
  handler: NodeHandlerFn;
  /** Connection timeouts and caps; unset ones take {@link DEFAULT_CONNECTION_LIMITS}. */
  limits?: Partial<ConnectionLimits>;
  /**
   * Called each time a connection over `limits.maxConnections` was closed at
   * accept, with the running total of such connections.
   */
  onConnectionRejected?: (total: number) => void;
  /** Serve TLS instead of cleartext (ALPN `h2` → HTTP/2, anything else → HTTP/1.1). */
  tls?: ListenerTls;
  /** Counts accepted connections as unauthenticated until a call on them authenticates (servers with authentication). */
  unauthenticated?: UnauthenticatedShare;
}

/** The TLS settings of a listener (PEM). */
export interface ListenerTls {
  /** Server certificate chain. */
  cert: string | Buffer;
  /** Its private key. */
  key: string | Buffer;
  /** CA bundle for client certificates: when set, every client must present one it signed (mutual TLS). */
  clientCa?: string | Buffer;
}

/** A bound port serving HTTP/2 and HTTP/1.1: cleartext (h2c by prior knowledge) or TLS (by ALPN). */
export interface DualProtocolListener {
  /** The bound host. */
  readonly host: string;
  /** The bound port (the chosen one when 0 was requested). */
  readonly port: number;
  /** Requests currently being served, over both protocols. */
  inFlight(): number;
  /** Open connections (every protocol, and those still being sniffed). */
  connections(): number;
  /** Connections closed at accept because `maxConnections` were already open, since start. */
  rejectedConnections(): number;
  /** The limits in force (defaults filled in). */
  readonly limits: Readonly<ConnectionLimits>;
  /**
   * Stops accepting connections and drains: HTTP/2 sessions get GOAWAY,
   * idle HTTP/1.1 connections close, busy ones close after their response.
   * Resolves once every request has finished or `graceMs` has elapsed;
   * `onGraceExpired` runs at that deadline if requests are still running,
   * then every remaining socket is destroyed after a short settle period.
   */
  close(options: { graceMs: number; onGraceExpired?: () => void }): Promise<void>;
}

/**
 * Binds one TCP port that sniffs the first bytes of every connection: the
 * HTTP/2 preface goes to an `http2` server (gRPC over h2c, bidi streaming),
 * anything else to an `http` server (Connect and gRPC-Web over HTTP/1.1).
 * Both use the same handler. Rejects with the listen error (e.g. EADDRINUSE).
 */
export async function listenDualProtocol(options: DualProtocolListenerOptions): Promise<DualProtocolListener> {
  const host = options.host ?? "127.0.0.1";
  const limits = resolveConnectionLimits(options.limits);
  let rejected = 0;
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  /** The calls in flight on each HTTP/1.1 connection (the finish of each: see `track`). */
  const http1Active = new Map<net.Socket, Set<() => void>>();
  let active = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  let socketsGone: (() => void) | undefined;

  const settleIfDrained = (): void => {
    if (draining && active === 0) drained?.();
  };

  // A call is done once its response has ended ("finish"), even when the client
  // never half-closes its side of the stream ("close" would wait for that).
  const track = (
    res: { once(event: "close" | "finish", fn: () => void): unknown },
    onDone?: () => void,
  ): (() => void) => {
    active++;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      active--;
      onDone?.();
      settleIfDrained();
    };
    res.once("finish", finish);
    res.once("close", finish);
    return finish;
  };

  // Node's rapid-reset (CVE-2023-44487) and flood protections stay at their
  // defaults: streamResetBurst/streamResetRate, maxSessionRejectedStreams,
  // maxSessionInvalidFrames.
  const h2Server = http2.createServer(
    { settings: { maxConcurrentStreams: limits.maxConcurrentStreams } },
    (req, res) => {
      // The stream's writable side finishing means the response (trailers included) is sent.
      track({ once: (event, fn) => (event === "finish" ? res.stream.once("finish", fn) : res.once("close", fn)) });
      options.handler(req, res);
    },
  );
  h2Server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    closeWhenIdle(session, limits.idleTimeoutMs);
    pingWhileStreaming(session, limits.keepaliveIntervalMs, limits.keepaliveTimeoutMs);
    if (draining) session.close();
  });

  const h1Options: http.ServerOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMs / 5))),
  };
  const h1Server = http.createServer(h1Options, (req, res) => {
    const socket = req.socket;
    let calls = http1Active.get(socket);
    if (!calls) http1Active.set(socket, (calls = new Set()));
    if (draining) res.setHeader("connection", "close");
    const finish = track(res, () => {
      calls.delete(finish);
      if (calls.size > 0) return;
      if (http1Active.get(socket) === calls) http1Active.delete(socket);
      if (draining) socket.end();
    });
    calls.add(finish);
    options.handler(req, res);
  });
  // This server never listens itself (sockets arrive by emit("connection")),
  // and Node only starts the connection tracking that enforces headersTimeout
  // and requestTimeout on "listening": start it here. (keepAliveTimeout is a
  // per-socket timer and needs nothing.) test/robustness/connection-timeouts
  // fails if a Node upgrade changes this.
  h1Server.emit("listening");

  const tlsServer = options.tls
    ? tlsTerminator(options.tls, limits.firstBytesTimeoutMs, h2Server, h1Server, options.unauthenticated)
    : undefined;
  const netServer = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0) socketsGone?.();
      // A pipelined request still queued behind another never gets its response's "finish" or "close":
      // the connection is gone, so every call on it is over.
      const routed = routedSocket(socket);
      const calls = http1Active.get(routed);
      http1Active.delete(routed);
      for (const finish of calls ?? []) finish();
    });
    socket.on("error", () => socket.destroy());
    options.unauthenticated?.accepted(socket);
    if (tlsServer) tlsServer.emit("connection", socket);
    else routeBySniffing(socket, h2Server, h1Server, limits.firstBytesTimeoutMs);
  });
  // Over the cap, Node closes the accepted handle at once (before any socket
  // object or timer exists) and emits "drop".
  netServer.maxConnections = limits.maxConnections;
  netServer.on("drop", () => {
    rejected++;
    options.onConnectionRejected?.(rejected);
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    netServer.once("error", onError);
    netServer.listen(options.port, host, () => {
      netServer.off("error", onError);
      resolve();
    });
  });
  const address = netServer.address() as net.AddressInfo;

  return {
    host,
    port: address.port,
    inFlight: () => active,
    connections: () => sockets.size,
    rejectedConnections: () => rejected,
    limits,
    close: async ({ graceMs, onGraceExpired }) => {
      if (draining) return;
      draining = true;
      const listenerClosed = new Promise<void>((resolve) => netServer.close(() => resolve()));
      for (const session of sessions) session.close();
      for (const socket of sockets) {
        const protocol = (socket as SniffedSocket)[kProtocol];
        if (protocol === undefined) socket.destroy();
        else if (protocol === "http1" && !http1Active.has(routedSocket(socket))) routedSocket(socket).end();
      }
      const allDone = new Promise<void>((resolve) => {
        drained = resolve;
        settleIfDrained();
      });
      let timer: NodeJS.Timeout | undefined;
      const expired = await Promise.race([
        allDone.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (expired) {
        onGraceExpired?.();
        await Promise.race([allDone, delay(250)]);
      }
      // Let connections close on their own so responses already written are
      // flushed (HTTP/2 sessions end after GOAWAY, HTTP/1.1 sockets after
      // their last response); destroy whatever is left after a short wait.
      for (const session of sessions) session.close();
      const gone = new Promise<void>((resolve) => {
        socketsGone = resolve;
        if (sockets.size === 0) resolve();
      });
      await Promise.race([gone, delay(SETTLE_MS)]);
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      // Stops the http server's connection-checking interval.
      h1Server.close(() => undefined);
      await listenerClosed;
    },
  };
}

const kProtocol = Symbol("agentd.protocol");
const kRouted = Symbol("agentd.routed");
/** An accepted socket, marked with the protocol it was routed to and (TLS) the decrypted socket the HTTP server got. */
type SniffedSocket = net.Socket & { [kProtocol]?: "h2" | "http1"; [kRouted]?: net.Socket };

/** The socket the HTTP servers see for an accepted one (its TLS socket under TLS). */
function routedSocket(socket: net.Socket): net.Socket {
  return (socket as SniffedSocket)[kRouted] ?? socket;
}

/**
 * A TLS server used only to terminate TLS on accepted sockets (fed by
 * `emit("connection")`): ALPN offers `h2` and `http/1.1`; `h2` goes to the
 * HTTP/2 server, anything else (including clients without ALPN) to the
 * HTTP/1.1 server. The handshake must finish within `handshakeTimeoutMs`;
 * with `clientCa`, a client without a certificate that CA signed fails the
 * handshake.
 */
function tlsTerminator(
  options: ListenerTls,
  handshakeTimeoutMs: number,
  h2Server: http2.Http2Server,
  h1Server: http.Server,
  unauthenticated: UnauthenticatedShare | undefined,
): tls.Server {
  const server = tls.createServer({
    cert: options.cert,
    key: options.key,
    ALPNProtocols: ["h2", "http/1.1"],
    handshakeTimeout: handshakeTimeoutMs,
    ...(options.clientCa !== undefined ? { ca: options.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
  });
  server.on("secureConnection", (secure: tls.TLSSocket) => {
    // The TLS socket wraps the accepted one (Node keeps it as `_parent`); the
    // drain logic marks and ends connections through the accepted socket.
    const raw = (secure as unknown as { _parent?: net.Socket })._parent;
    const sniffed = (raw ?? secure) as SniffedSocket;
    sniffed[kRouted] = secure;
    if (raw) unauthenticated?.route(raw, secure);
    secure.on("error", () => secure.destroy());
    if (secure.alpnProtocol === "h2") {
      sniffed[kProtocol] = "h2";
      h2Server.emit("connection", secure);
    } else {
      sniffed[kProtocol] = "http1";
      h1Server.emit("connection", secure);
    }
  });
  // Failed handshakes (no client certificate, wrong CA, timeouts, plain HTTP on a TLS port) just close.
  server.on("tlsClientError", (_err, socket) => socket.destroy());
  return server;
}

/**
 * Closes `session` once it has had no open stream for `idleMs` (GOAWAY, then
 * destroy if the peer keeps it open). Only streams count: frames without one
 * (PING, SETTINGS, WINDOW_UPDATE, partial HEADERS) do not restart the clock,
 * and an open stream, however quiet, keeps the session.
 */
function closeWhenIdle(session: http2.ServerHttp2Session, idleMs: number): void {
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    timer = setTimeout(() => {
      session.close();
      // A peer that ignores GOAWAY still goes (unless a stream slipped in before it).
      setTimeout(() => {
        if (!streaming()) session.destroy();
      }, SETTLE_MS).unref();
    }, idleMs).unref();
  };
  const streaming = watchOpenStreams(session, {
    busy: () => clearTimeout(timer),
    idle: () => {
      if (!session.closed && !session.destroyed) arm();
    },
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

/**
 * Reads until the bytes either match the full HTTP/2 preface or diverge from
 * it, puts them back on the socket and hands it to the matching server.
 * Destroys the socket if that has not happened `timeoutMs` after accept.
 */
function routeBySniffing(
  socket: net.Socket,
  h2Server: http2.Http2Server,
  h1Server: http.Server,
  timeoutMs: number,
): void {
  let buffered: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), timeoutMs).unref();
  socket.once("close", () => clearTimeout(timer));
  const onData = (chunk: Buffer): void => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    const n = Math.min(buffered.length, HTTP2_PREFACE.length);
    const prefixMatches = buffered.subarray(0, n).equals(HTTP2_PREFACE.subarray(0, n));
    if (prefixMatches && buffered.length < HTTP2_PREFACE.length) return;
    socket.off("data", onData);
    clearTimeout(timer);
    socket.pause();
    socket.unshift(buffered);
    const sniffed = socket as SniffedSocket;
    if (prefixMatches) {
      sniffed[kProtocol] = "h2";
      h2Server.emit("connection", socket);
    } else {
      sniffed[kProtocol] = "http1";
      h1Server.emit("connection", socket);
      // The http server parses from 'data' events; the h2 session instead
      // drains the buffered bytes itself on the next tick, so only resume here.
      socket.resume();
    }
  };
  socket.on("data", onData);
}
