// Browser-safe: imports @connectrpc/connect-web only (fetch-based), never Node modules.
import { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { markHalfDuplex } from "./client-errors.js";

/** The protocols a browser can speak to agentd (gRPC proper needs HTTP/2 trailers, which fetch cannot read). */
export type BrowserProtocol = "connect" | "grpc-web";

/** How {@link createBrowserTransport} reaches agentd from a browser. */
export interface BrowserTransportOptions {
  /** Connect (default) or gRPC-Web. */
  protocol?: BrowserProtocol;
  /** Binary protobuf instead of JSON (default: binary). */
  useBinaryFormat?: boolean;
  /** Interceptors run on every call (auth headers, logging, ...). */
  interceptors?: Interceptor[];
  /** Replacement for `globalThis.fetch` (e.g. to set `credentials`). */
  fetch?: typeof globalThis.fetch;
  /** Default per-call timeout in milliseconds (none by default). */
  defaultTimeoutMs?: number;
}

/**
 * A fetch-based `@connectrpc/connect-web` transport to agentd at `baseUrl`.
 * Unary and server-streaming calls (Run, RunStream, GetSnapshot,
 * ListSnapshots, WatchSnapshot, Abort, ListAgents) work over it; the bidi Chat
 * does not (fetch cannot stream a request body both ways) — use Run/RunStream
 * per turn with `sessionId` or `state` instead. Throws a `ConnectError` with
 * `Code.InvalidArgument` for a protocol browsers cannot speak.
 */
export function createBrowserTransport(baseUrl: string, options: BrowserTransportOptions = {}): Transport {
  const common = {
    baseUrl,
    useBinaryFormat: options.useBinaryFormat ?? true,
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: options.defaultTimeoutMs } : {}),
  };
  const protocol = options.protocol ?? "connect";
  switch (protocol) {
    case "connect":
      return markHalfDuplex(createConnectTransport(common), "Connect over fetch (browsers)");
    case "grpc-web":
      return markHalfDuplex(createGrpcWebTransport(common), "gRPC-Web over fetch (browsers)");
    default:
      throw new ConnectError(
        `protocol "${String(protocol)}" is not available in browsers: use "connect" or "grpc-web"`,
        Code.InvalidArgument,
      );
  }
}
