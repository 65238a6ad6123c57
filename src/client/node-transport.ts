import { Code, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { clientError, markHalfDuplex } from "./client-errors.js";

/** The wire protocols agentd serves on its one port. */
export type ClientProtocol = "grpc" | "connect" | "grpc-web";

/** How {@link createNodeTransport} reaches agentd from Node.js. */
export interface NodeTransportOptions {
  /** gRPC (always HTTP/2), Connect, or gRPC-Web. */
  protocol: ClientProtocol;
  /**
   * HTTP version. gRPC needs "2". Defaults: "2" for gRPC and Connect (so the
   * bidi Chat works), "1.1" for gRPC-Web (unary and server-streaming only).
   */
  httpVersion?: "1.1" | "2";
  /** Binary protobuf instead of JSON for Connect and gRPC-Web (default: binary). gRPC is always binary. */
  useBinaryFormat?: boolean;
  /** Interceptors run on every call (auth headers, logging, ...). */
  interceptors?: Interceptor[];
  /** Default per-call timeout in milliseconds (none by default). */
  defaultTimeoutMs?: number;
  /**
   * A bearer token sent as `authorization: Bearer <token>` on every call; a
   * function is called per call (for tokens that rotate).
   */
  token?: string | (() => string | Promise<string>);
  /** TLS settings for an `https://` base URL (PEM strings or buffers); default: the system's CAs, no client certificate. */
  tls?: ClientTls;
  /**
   * HTTP/2: while a call is open and nothing arrived on its connection for
   * this many ms, the client sends a PING (default 30 000; `Infinity`: never).
   * See {@link NodeTransportOptions.keepaliveTimeoutMs}.
   */
  keepaliveIntervalMs?: number;
  /**
   * HTTP/2: a PING not answered within this many ms closes the connection
   * and fails its calls `UNAVAILABLE` (default 20 000), as when the server's
   * host vanished without closing the connection; without it such a call
   * would wait forever.
   */
  keepaliveTimeoutMs?: number;
}

/** The client's HTTP/2 keepalive defaults: a PING after 30 s without a frame while a call is open, answered within 20 s. */
export const DEFAULT_CLIENT_KEEPALIVE = Object.freeze({ intervalMs: 30_000, timeoutMs: 20_000 });

/** TLS settings of a client. */
export interface ClientTls {
  /** CA bundle that signed the server certificate (a private CA); default the system's. */
  ca?: string | Buffer;
  /** Client certificate chain, for mutual TLS. */
  cert?: string | Buffer;
  /** The client certificate's private key. */
  key?: string | Buffer;
  /** Name to verify the server certificate against, when it differs from the URL's host. */
  servername?: string;
}

/** An interceptor that puts the bearer token on every request. */
function bearerInterceptor(token: NonNullable<NodeTransportOptions["token"]>): Interceptor {
  return (next) => async (req) => {
    const value = typeof token === "function" ? await token() : token;
    req.header.set("authorization", `Bearer ${value}`);
    return next(req);
  };
}

/** A keepalive setting: `value` if it is a positive number of ms (`Infinity` only if `unbounded`), `fallback` when unset; INVALID_ARGUMENT otherwise. */
function keepaliveSetting(name: string, value: number | undefined, fallback: number, unbounded: boolean): number {
  if (value === undefined) return fallback;
  const ok = typeof value === "number" && value > 0 && (Number.isFinite(value) || (unbounded && value === Infinity));
  if (!ok)
    throw clientError(
      Code.InvalidArgument,
      `${name} must be a positive${unbounded ? "" : ", finite"} number of milliseconds, got ${String(value)}`,
    );
  return value;
}

/** The HTTP version a protocol uses when none is asked for. */
export function defaultHttpVersion(protocol: ClientProtocol): "1.1" | "2" {
  return protocol === "grpc-web" ? "1.1" : "2";
}

/**
 * A `@connectrpc/connect-node` transport to agentd at `baseUrl` (e.g.
 * `http://127.0.0.1:8080`; `http:` URLs use cleartext HTTP/2 where HTTP/2 is
 * chosen). Throws a `ConnectError` with `Code.InvalidArgument` for gRPC over
 * HTTP/1.1 or an unknown protocol.
 */
export function createNodeTransport(baseUrl: string, options: NodeTransportOptions): Transport {
  const httpVersion = options.httpVersion ?? defaultHttpVersion(options.protocol);
  const interceptors = [
    ...(options.token !== undefined ? [bearerInterceptor(options.token)] : []),
    ...(options.interceptors ?? []),
  ];
  const tls = options.tls;
  const common = {
    baseUrl,
    useBinaryFormat: options.useBinaryFormat ?? true,
    ...(interceptors.length > 0 ? { interceptors } : {}),
    ...(tls ? { nodeOptions: { ...tls } } : {}),
    ...(options.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: options.defaultTimeoutMs } : {}),
  };
  const { intervalMs, timeoutMs } = DEFAULT_CLIENT_KEEPALIVE;
  const keepalive = {
    pingIntervalMs: keepaliveSetting("keepaliveIntervalMs", options.keepaliveIntervalMs, intervalMs, true),
    pingTimeoutMs: keepaliveSetting("keepaliveTimeoutMs", options.keepaliveTimeoutMs, timeoutMs, false),
  };
  switch (options.protocol) {
    case "grpc":
      if (httpVersion !== "2")
        throw clientError(
          Code.InvalidArgument,
          'gRPC needs HTTP/2: drop httpVersion or use protocol "connect" or "grpc-web" for HTTP/1.1',
        );
      return createGrpcTransport({ ...common, ...keepalive });
    case "connect": {
      if (httpVersion === "2") return createConnectTransport({ ...common, ...keepalive, httpVersion });
      return markHalfDuplex(createConnectTransport({ ...common, httpVersion }), "Connect over HTTP/1.1");
    }
    case "grpc-web": {
      if (httpVersion === "2") return createGrpcWebTransport({ ...common, ...keepalive, httpVersion });
      return markHalfDuplex(createGrpcWebTransport({ ...common, httpVersion }), "gRPC-Web over HTTP/1.1");
    }
    default:
      throw clientError(
        Code.InvalidArgument,
        `unknown protocol "${String(options.protocol)}": use "grpc", "connect" or "grpc-web"`,
      );
  }
}
