import { cors as connectCors } from "@connectrpc/connect";
import type { IncomingHttpHeaders } from "node:http";

/** Which browser origins may call the server cross-origin. */
export interface CorsOptions {
  /** Exact origins (e.g. `https://app.example.com`), or `*` for any. Empty: no CORS headers at all. */
  allowedOrigins: readonly string[];
  /** How long browsers may cache a preflight answer (s); default 7200. */
  maxAgeSeconds?: number;
}

/** What CORS reads of a request (Node's HTTP/1.1 and HTTP/2 requests both fit). */
interface Request {
  method?: string;
  headers: IncomingHttpHeaders;
}

/** What CORS writes to a response. */
interface Response {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(): unknown;
}

/**
 * Wraps a request handler with CORS for Connect and gRPC-Web browser clients:
 * a preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed
 * origin is answered 204 with the methods and headers the protocols need; other
 * requests from an allowed origin get `Access-Control-Allow-Origin` and the
 * exposed protocol headers. Requests from other origins pass through unchanged
 * (the browser then blocks them). With no allowed origins the handler is returned as is.
 */
export function withCors<Req extends Request, Res extends Response>(
  handler: (req: Req, res: Res) => void,
  options: CorsOptions,
): (req: Req, res: Res) => void {
  if (options.allowedOrigins.length === 0) return handler;
  const any = options.allowedOrigins.includes("*");
  const allowed = new Set(options.allowedOrigins);
  const maxAge = String(options.maxAgeSeconds ?? 7200);
  return (req, res) => {
    const origin = req.headers.origin;
    if (typeof origin !== "string" || !(any || allowed.has(origin))) return handler(req, res);
    res.setHeader("Access-Control-Allow-Origin", any ? "*" : origin);
    if (!any) res.setHeader("Vary", "Origin");
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"]) {
      res.setHeader("Access-Control-Allow-Methods", connectCors.allowedMethods.join(", "));
      res.setHeader("Access-Control-Allow-Headers", connectCors.allowedHeaders.join(", "));
      res.setHeader("Access-Control-Max-Age", maxAge);
      res.statusCode = 204;
      res.end();
      return;
    }
    res.setHeader("Access-Control-Expose-Headers", [...connectCors.exposedHeaders, "agentd-error-details"].join(", "));
    handler(req, res);
  };
}
