import type { IncomingMessage, ServerResponse } from "node:http";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import { createContextValues } from "@connectrpc/connect";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Logger } from "pino";
import { AgentError } from "../../errors/agent-error.js";
import type { AgentRegistry } from "../../runtime/agents/agent-registry.js";
import {
  admitCall,
  connectionInfoKey,
  principalOf,
  type CallGuardOptions,
  type ConnectionInfo,
} from "../auth/call-guard.js";
import { agentToolsServer } from "./mcp-agent-tools.js";

/** The path agentd answers MCP (Streamable HTTP) at. */
export const MCP_PATH = "/mcp";

/** The procedure name authenticators see for MCP requests. */
export const MCP_PROCEDURE = "/mcp";

/** A request and response as the server's handler gets them (HTTP/1.1, or HTTP/2 compatibility). */
type NodeRequest = Parameters<ReturnType<typeof connectNodeAdapter>>[0];
type NodeResponse = Parameters<ReturnType<typeof connectNodeAdapter>>[1];

/** Answers a JSON-RPC error with an HTTP status (and extra headers). */
function answerError(
  res: NodeResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

/** What {@link mcpRoute} serves with. */
export interface McpRouteOptions {
  /** The agents offered as tools (server-managed ones). */
  registry: AgentRegistry;
  /** Who may call: the same guard as every RPC (bearer tokens, JWT, client certificates, Host check). */
  auth: CallGuardOptions;
  logger: Logger;
  /** Largest request body accepted (bytes); larger ones get 413. */
  maxBodyBytes: number;
  /** The authority and client certificate of a request's connection. */
  connectionInfo(req: NodeRequest): ConnectionInfo;
}

/** HTTP status of a refused MCP request. */
function refusedStatus(error: AgentError): number {
  return error.status === "UNAUTHENTICATED" ? 401 : 403;
}

/** The request's headers as a Fetch `Headers` (HTTP/2 pseudo-headers left out). */
function headersOf(req: NodeRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/**
 * The `/mcp` route: MCP over Streamable HTTP, stateless (each POST is
 * answered on its own; no MCP session). Each request is authenticated like
 * an RPC (refused: 401 with `WWW-Authenticate: Bearer`, or 403, and a
 * JSON-RPC error naming why) and acts for its principal's tenant. Returns
 * false for other paths.
 */
export function mcpRoute(options: McpRouteOptions): (req: NodeRequest, res: NodeResponse) => boolean {
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== MCP_PATH) return false;
    const started = performance.now();
    res.once("close", () =>
      options.logger.info(
        {
          path: MCP_PATH,
          method: req.method,
          status: res.statusCode,
          durationMs: Math.round(performance.now() - started),
        },
        "mcp",
      ),
    );
    serve(options, req, res).catch((err: unknown) => {
      options.logger.error({ err }, "MCP request could not be handled");
      if (!res.headersSent) answerError(res, 500, -32603, "internal error");
      else res.end();
    });
    return true;
  };
}

async function serve(options: McpRouteOptions, req: NodeRequest, res: NodeResponse): Promise<void> {
  const headers = headersOf(req);
  const values = createContextValues();
  values.set(connectionInfoKey, options.connectionInfo(req));
  try {
    await admitCall(options.auth, MCP_PROCEDURE, headers, values, false);
  } catch (err) {
    const error = AgentError.from(err);
    const status = refusedStatus(error);
    answerError(res, status, -32001, error.message, status === 401 ? { "www-authenticate": "Bearer" } : {});
    return;
  }
  let body: unknown;
  if (req.method === "POST") {
    const read = await readJsonBody(req, options.maxBodyBytes);
    if ("refused" in read) {
      answerError(res, read.refused.status, read.refused.code, read.refused.message);
      return;
    }
    body = read.body;
  }
  const server = agentToolsServer(options.registry, { principal: principalOf({ values }), headers });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.once("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req as IncomingMessage, res as unknown as ServerResponse, body);
}

/** A POST body read whole, at most `maxBytes`, and parsed as JSON; or why it is refused. */
async function readJsonBody(
  req: NodeRequest,
  maxBytes: number,
): Promise<{ body: unknown } | { refused: { status: number; code: number; message: string } }> {
  const tooLarge = {
    refused: { status: 413, code: -32600, message: `the request body is larger than ${maxBytes} bytes` },
  };
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) return tooLarge;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return tooLarge;
    chunks.push(chunk);
  }
  try {
    return { body: JSON.parse(Buffer.concat(chunks).toString("utf8")) };
  } catch {
    return { refused: { status: 400, code: -32700, message: "parse error: the request body is not JSON" } };
  }
}
