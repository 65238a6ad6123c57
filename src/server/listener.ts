import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { connectNodeAdapter } from "@connectrpc/connect-node";

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
}

/** A bound cleartext port serving HTTP/2 (h2c, prior knowledge) and HTTP/1.1. */
export interface DualProtocolListener {
  /** The bound host. */
  readonly host: string;
  /** The bound port (the chosen one when 0 was requested). */
  readonly port: number;
  /** Requests currently being served, over both protocols. */
  inFlight(): number;
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
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  const http1Active = new Map<net.Socket, number>();
  let active = 0;
  let draining = false;
  let drained: (() => void) | undefined;
  let socketsGone: (() => void) | undefined;

  const settleIfDrained = (): void => {
    if (draining && active === 0) drained?.();
  };

  // A call is done once its response has ended ("finish"), even when the client
  // never half-closes its side of the stream ("close" would wait for that).
  const track = (res: { once(event: "close" | "finish", fn: () => void): unknown }, onDone?: () => void): void => {
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
  };

  const h2Server = http2.createServer({}, (req, res) => {
    // The stream's writable side finishing means the response (trailers included) is sent.
    track({ once: (event, fn) => (event === "finish" ? res.stream.once("finish", fn) : res.once("close", fn)) });
    options.handler(req, res);
  });
  h2Server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (draining) session.close();
  });

  const h1Server = http.createServer({}, (req, res) => {
    const socket = req.socket;
    http1Active.set(socket, (http1Active.get(socket) ?? 0) + 1);
    if (draining) res.setHeader("connection", "close");
    track(res, () => {
      const left = (http1Active.get(socket) ?? 1) - 1;
      if (left > 0) http1Active.set(socket, left);
      else http1Active.delete(socket);
      if (draining && left <= 0) socket.end();
    });
    options.handler(req, res);
  });

  const netServer = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0) socketsGone?.();
      http1Active.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    routeBySniffing(socket, h2Server, h1Server);
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
    close: async ({ graceMs, onGraceExpired }) => {
      if (draining) return;
      draining = true;
      const listenerClosed = new Promise<void>((resolve) => netServer.close(() => resolve()));
      for (const session of sessions) session.close();
      for (const socket of sockets) {
        const protocol = (socket as SniffedSocket)[kProtocol];
        if (protocol === undefined) socket.destroy();
        else if (protocol === "http1" && !http1Active.has(socket)) socket.end();
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
      await listenerClosed;
    },
  };
}

const kProtocol = Symbol("agentd.protocol");
type SniffedSocket = net.Socket & { [kProtocol]?: "h2" | "http1" };

/**
 * Reads until the bytes either match the full HTTP/2 preface or diverge from
 * it, puts them back on the socket and hands it to the matching server.
 */
function routeBySniffing(socket: net.Socket, h2Server: http2.Http2Server, h1Server: http.Server): void {
  let buffered: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    const n = Math.min(buffered.length, HTTP2_PREFACE.length);
    const prefixMatches = buffered.subarray(0, n).equals(HTTP2_PREFACE.subarray(0, n));
    if (prefixMatches && buffered.length < HTTP2_PREFACE.length) return;
    socket.off("data", onData);
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
