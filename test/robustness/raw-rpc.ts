import {
  connect,
  constants,
  type ClientHttp2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from "node:http2";

/** The path of an `agentd.v1.AgentService` method. */
export const agentPath = (method: string): string => `/agentd.v1.AgentService/${method}`;

/** One gRPC / gRPC-Web message frame: flags byte, 4-byte big-endian length, payload. */
export function frame(payload: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(payload.byteLength, 1);
  return Buffer.concat([head, payload]);
}

/** What came back for one raw request. */
export interface RawResponse {
  httpStatus: number;
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders;
  body: Buffer;
  /** grpc-status from trailers (or trailers-only headers), if any. */
  grpcStatus?: number;
  grpcMessage?: string;
  /** Bytes of all trailer (or trailers-only header) names and values. */
  trailerBytes: number;
  /** Set when the stream failed (reset, timeout) instead of answering. */
  error?: string;
  /** True when nothing came back within the timeout. */
  hung?: boolean;
}

/** An HTTP/2 session to `url` (prior knowledge, cleartext). */
export function openSession(url: string): ClientHttp2Session {
  const session = connect(url);
  session.on("error", () => {});
  return session;
}

/** Options of {@link rawRequest}. */
export interface RawRequestOptions {
  headers?: OutgoingHttpHeaders;
  /** Give up (and reset the stream) after this many ms; default 5000. */
  timeoutMs?: number;
  /** Called once the response headers arrived (e.g. to cancel mid-stream). */
  onResponse?: (cancel: () => void) => void;
  /** Called for every received data chunk. */
  onData?: (chunk: Buffer, cancel: () => void) => void;
}

/** Sends one HTTP/2 POST with `body` on `session` and collects the answer. */
export function rawRequest(
  session: ClientHttp2Session,
  path: string,
  body: Uint8Array,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  return new Promise((resolve) => {
    const stream = session.request({ ":method": "POST", ":path": path, ...options.headers });
    const chunks: Buffer[] = [];
    let headers: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    let settled = false;
    const cancel = (): void => {
      stream.close(constants.NGHTTP2_CANCEL);
    };
    const finish = (extra: Partial<RawResponse> = {}): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const statusSource = trailers["grpc-status"] !== undefined ? trailers : headers;
      const status = statusSource["grpc-status"];
      const message = statusSource["grpc-message"];
      let trailerBytes = 0;
      for (const [k, v] of Object.entries(statusSource))
        if (!k.startsWith(":")) trailerBytes += k.length + String(v ?? "").length;
      resolve({
        httpStatus: Number(headers[":status"] ?? 0),
        headers,
        trailers,
        body: Buffer.concat(chunks),
        ...(status !== undefined ? { grpcStatus: Number(status) } : {}),
        ...(message !== undefined ? { grpcMessage: decodeURIComponent(String(message)) } : {}),
        trailerBytes,
        ...extra,
      });
    };
    const timer = setTimeout(() => {
      finish({ hung: true, error: "timeout" });
      stream.close(constants.NGHTTP2_CANCEL);
    }, options.timeoutMs ?? 5000);
    stream.on("response", (h) => {
      headers = h;
      options.onResponse?.(cancel);
    });
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      options.onData?.(chunk, cancel);
    });
    stream.on("error", (err) => finish({ error: err.message }));
    stream.on("close", () =>
      finish(stream.rstCode && stream.rstCode !== constants.NGHTTP2_NO_ERROR ? { error: `rst ${stream.rstCode}` } : {}),
    );
    stream.end(body);
  });
}

/** A gRPC (HTTP/2) call with one already-framed request body. */
export function grpcCall(
  session: ClientHttp2Session,
  method: string,
  framed: Uint8Array,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  return rawRequest(session, agentPath(method), framed, {
    ...options,
    headers: { "content-type": "application/grpc", te: "trailers", ...options.headers },
  });
}
