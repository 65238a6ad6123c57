import { Code, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { clientError } from "./client-errors.js";

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
  const common = {
    baseUrl,
    useBinaryFormat: options.useBinaryFormat ?? true,
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    ...(options.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: options.defaultTimeoutMs } : {}),
  };
  switch (options.protocol) {
    case "grpc":
      if (httpVersion !== "2") throw clientError(Code.InvalidArgument, 'gRPC needs HTTP/2: drop httpVersion or use protocol "connect" or "grpc-web" for HTTP/1.1');
      return createGrpcTransport(common);
    case "connect":
      return createConnectTransport({ ...common, httpVersion });
    case "grpc-web":
      return createGrpcWebTransport({ ...common, httpVersion });
    default:
      throw clientError(Code.InvalidArgument, `unknown protocol "${String(options.protocol)}": use "grpc", "connect" or "grpc-web"`);
  }
}
