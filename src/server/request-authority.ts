import { Code, ConnectError, createContextKey } from "@connectrpc/connect";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { truncateEcho } from "./call-errors.js";

/**
 * A request's authority (HTTP/1.1 `Host`, HTTP/2 `:authority` or `Host`) is
 * what connect-node builds the request URL from; a value that is not a
 * `host[:port]` (a port over 65535, `a:b`, `[::1`, `:80`) or a missing one
 * (HTTP/1.0 without Host) made that throw inside the request listener and
 * took the process down. {@link screenAuthority} catches those requests
 * first: the call then runs against a placeholder authority and the request
 * gate fails it INVALID_ARGUMENT (see {@link malformedRequestKey}), so every
 * protocol answers it in its own framing, before any body is read.
 */

/** The authority a malformed request's URL is built from instead (RFC 6761 reserves `.invalid`). */
export const PLACEHOLDER_AUTHORITY = "agentd.invalid";

/** Context key holding why a request is malformed (the INVALID_ARGUMENT message), when it is. */
export const malformedRequestKey = createContextKey<string | undefined>(undefined, {
  description: "agentd malformed request",
});

/** Characters that may not appear in a Host value (path, query, fragment, userinfo, backslash, blanks). */
const NOT_IN_AUTHORITY = /[/?#@\\\s]/;

/**
 * Why `authority` cannot serve as a request's `host[:port]`, or undefined
 * when it can (it parses as the authority of an `http:` URL).
 */
export function authorityProblem(authority: string | undefined, headerName: string): string | undefined {
  if (authority === undefined) {
    return `the request has no ${headerName} header: send one naming the server (host[:port], e.g. localhost:50051)`;
  }
  if (authority !== "" && !NOT_IN_AUTHORITY.test(authority) && URL.canParse(`http://${authority}`)) return undefined;
  return (
    `the ${headerName} header ${JSON.stringify(truncateEcho(authority, 100))} is not a valid host[:port]: ` +
    `send the server's name or address and a port from 0 to 65535 (IPv6 in brackets), e.g. localhost:50051`
  );
}

/**
 * Checks a Node request's authority. A valid one is left alone and undefined
 * returned. Otherwise the request's authority header is replaced in place by
 * {@link PLACEHOLDER_AUTHORITY} (so connect-node can build the URL) and the
 * INVALID_ARGUMENT message is returned, for {@link malformedRequestKey}.
 */
export function screenAuthority(req: IncomingMessage | Http2ServerRequest): string | undefined {
  const h2 = "stream" in req;
  const authority = h2 ? req.authority : req.headers.host;
  const problem = authorityProblem(typeof authority === "string" ? authority : undefined, h2 ? ":authority" : "Host");
  if (problem === undefined) return undefined;
  if (h2) req.headers[":authority"] = PLACEHOLDER_AUTHORITY;
  else req.headers.host = PLACEHOLDER_AUTHORITY;
  return problem;
}

/** The INVALID_ARGUMENT error a malformed request ends with (see {@link malformedRequestKey}). */
export function malformedRequestError(problem: string): ConnectError {
  return new ConnectError(problem, Code.InvalidArgument);
}
