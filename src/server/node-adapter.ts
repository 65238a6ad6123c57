import { ConnectError, createConnectRouter, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { uResponseNotFound, type UniversalHandler, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
  type ConnectNodeAdapterOptions,
} from "@connectrpc/connect-node";
import { isClientGoneError } from "./call-errors.js";
import { callLogKey } from "./call-log.js";
import { malformedRequestError, malformedRequestKey, screenAuthority } from "./request-authority.js";
import { statusForCode } from "../protocol/status-codes.js";
import { resetUnfinishedStream } from "./stream-reset.js";

type NodeHandler = ReturnType<typeof import("@connectrpc/connect-node").connectNodeAdapter>;

/** Options for {@link agentdNodeAdapter}: connect-node's, plus where response write failures go. */
export interface AgentdNodeAdapterOptions extends ConnectNodeAdapterOptions {
  /**
   * Called when writing a response failed for another reason than the
   * client having gone away (which is normal and already logged as CANCELLED
   * on the call's line). Default: ignored.
   */
  onWriteError?: (procedure: string, err: ConnectError) => void;
  /**
   * Called when the request listener itself threw building the call (a
   * server fault: the request was answered with a bare 500). Default: ignored.
   */
  onRequestError?: (procedure: string, err: unknown) => void;
}

/**
 * connect-node's `connectNodeAdapter`, except for four things:
 * - a request whose Host / `:authority` is missing or not a valid
 *   `host[:port]` is not a crash but a call the request gate fails
 *   INVALID_ARGUMENT (see {@link screenAuthority}); anything else the request
 *   listener throws is answered 500 and reported to `onRequestError`, never
 *   left to take the process down;
 * - a response write that fails because the client cancelled or dropped the
 *   call is not printed to stderr with a stack trace (connect-node does that
 *   for every failure but ABORTED), and other write failures go to `onWriteError`;
 * - the bodiless 415 and 505 answers of protocol negotiation get a Connect
 *   JSON error body that says what to change (see {@link explainRejection});
 * - an HTTP/2 stream whose client has not closed its side when the response
 *   (status included) was sent is reset, freeing its slot and the call (see
 *   {@link resetUnfinishedStream}).
 */
export function agentdNodeAdapter(options: AgentdNodeAdapterOptions): NodeHandler {
  if (options.acceptCompression === undefined) options.acceptCompression = [compressionGzip, compressionBrotli];
  const router = createConnectRouter({ ...options, requestGate: refuseMalformed(options.requestGate) });
  options.routes(router);
  const prefix = options.requestPathPrefix ?? "";
  const paths = new Map(router.handlers.map((h) => [prefix + h.requestPath, h]));
  const fallback: NodeHandler =
    options.fallback ??
    ((_req, res) => {
      res.writeHead(uResponseNotFound.status);
      res.end();
    });
  return (req, res) => {
    const handler = paths.get(req.url?.split("?", 2)[0] ?? "");
    if (!handler) {
      fallback(req, res);
      return;
    }
    const procedure = `/${handler.service.typeName}/${handler.method.name}`;
    resetUnfinishedStream(req);
    let uReq: ReturnType<typeof universalRequestFromNodeRequest>;
    try {
      const values = options.contextValues?.(req) ?? createContextValues();
      const malformed = screenAuthority(req);
      if (malformed !== undefined) values.set(malformedRequestKey, malformed);
      uReq = universalRequestFromNodeRequest(req, res, undefined, values);
    } catch (reason) {
      answerUnexpected(res);
      options.onRequestError?.(procedure, reason);
      return;
    }
    handler(uReq)
      .then((uRes) =>
        universalResponseToNodeResponse(explainRejection(uRes, handler, req.headers["content-type"]), res),
      )
      .catch((reason: unknown) => {
        const err = ConnectError.from(reason);
        if (isClientGoneError(err) || isClientGoneError(err.cause)) return;
        options.onWriteError?.(procedure, err);
      });
  };
}

/**
 * A request gate that fails a call marked malformed by {@link screenAuthority}
 * INVALID_ARGUMENT (noting the outcome for the call's log line), before
 * `gate` and before any body is read; other calls go on to `gate`.
 */
function refuseMalformed(
  gate: ((context: HandlerContext) => void | Promise<void>) | undefined,
): (context: HandlerContext) => void | Promise<void> {
  return (context) => {
    const malformed = context.values.get(malformedRequestKey);
    if (malformed !== undefined) {
      const err = malformedRequestError(malformed);
      const log = context.values.get(callLogKey);
      if (log) log.outcome = { code: statusForCode(err.code), error: err.rawMessage };
      throw err;
    }
    return gate?.(context);
  };
}

/** Ends a response with a bare 500 (or just ends it, when headers already went out). */
function answerUnexpected(res: Parameters<NodeHandler>[1]): void {
  try {
    if (!res.headersSent) res.writeHead(500);
    res.end();
  } catch {
    // the connection is already gone
  }
}

/**
 * Protocol negotiation answers an unsupported Content-Type with HTTP 415 and a
 * bidi call over HTTP/1.1 with HTTP 505, both with an empty body: a curl user
 * sees nothing. This gives them a Connect JSON error body naming the fix (a
 * Connect client reads it as the error; gRPC and gRPC-Web clients go by the
 * status, as before). Every other response passes through unchanged.
 */
export function explainRejection(
  uRes: UniversalServerResponse,
  handler: UniversalHandler,
  contentType: string | undefined,
): UniversalServerResponse {
  if ((uRes.status !== 415 && uRes.status !== 505) || uRes.body !== undefined) return uRes;
  const procedure = `${handler.service.typeName}/${handler.method.name}`;
  const kind = handler.method.methodKind;
  let code: string;
  let message: string;
  if (uRes.status === 505) {
    code = "unimplemented";
    message =
      `${procedure} is a bidirectional stream and needs HTTP/2 (gRPC or Connect over HTTP/2); this request came over HTTP/1.1. ` +
      `Use grpcurl, buf curl --http2-prior-knowledge, or a gRPC/Connect client over HTTP/2; over HTTP/1.1 use Run or RunStream per turn with the sessionId`;
  } else {
    code = "invalid_argument";
    const got = contentType ? `Content-Type "${contentType}"` : "no Content-Type";
    message =
      kind === "unary"
        ? `${procedure} got ${got}: send "Content-Type: application/json" with a JSON body (Connect), or use application/proto, application/grpc or application/grpc-web`
        : `${procedure} is a ${kind === "server_streaming" ? "server-streaming" : "streaming"} RPC and got ${got}: over Connect it takes "Content-Type: application/connect+json" ` +
          `with an enveloped body (a 5-byte prefix: flags, then the JSON length as a big-endian uint32), or use gRPC (grpcurl) or gRPC-Web`;
  }
  const header = new Headers(uRes.header);
  header.set("Content-Type", "application/json");
  const body = new TextEncoder().encode(JSON.stringify({ code, message }));
  return {
    ...uRes,
    header,
    body: (async function* () {
      yield body;
    })(),
  };
}
