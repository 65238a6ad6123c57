import { ConnectError, createConnectRouter } from "@connectrpc/connect";
import { uResponseNotFound } from "@connectrpc/connect/protocol";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
  type ConnectNodeAdapterOptions,
} from "@connectrpc/connect-node";
import { isClientGoneError } from "./call-errors.js";

type NodeHandler = ReturnType<typeof import("@connectrpc/connect-node").connectNodeAdapter>;

/** Options for {@link agentdNodeAdapter}: connect-node's, plus where response write failures go. */
export interface AgentdNodeAdapterOptions extends ConnectNodeAdapterOptions {
  /**
   * Called when writing a response failed for another reason than the
   * client having gone away (which is normal and already logged as CANCELLED
   * on the call's line). Default: ignored.
   */
  onWriteError?: (procedure: string, err: ConnectError) => void;
}

/**
 * connect-node's `connectNodeAdapter`, except for one thing: a response write
 * that fails because the client cancelled or dropped the call is not printed
 * to stderr with a stack trace (connect-node does that for every failure but
 * ABORTED), and other write failures go to `onWriteError`.
 */
export function agentdNodeAdapter(options: AgentdNodeAdapterOptions): NodeHandler {
  if (options.acceptCompression === undefined) options.acceptCompression = [compressionGzip, compressionBrotli];
  const router = createConnectRouter(options);
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
    const uReq = universalRequestFromNodeRequest(req, res, undefined, options.contextValues?.(req));
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((reason: unknown) => {
        const err = ConnectError.from(reason);
        if (isClientGoneError(err) || isClientGoneError(err.cause)) return;
        options.onWriteError?.(`/${handler.service.typeName}/${handler.method.name}`, err);
      });
  };
}
