import { createHash } from "node:crypto";
import type { CallToolResult, Tool as McpToolInfo } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Tool } from "../define-tool.js";
import type { Principal } from "../../types/principal.js";
import { McpTimeoutError, type McpServerConnection } from "./mcp-server-connection.js";

/** Longest tool name every model provider accepts. */
const MAX_PROVIDER_NAME = 64;

/**
 * The name a model provider sees for tool `tool` of MCP server `server`:
 * `<server>__<tool>` with every character outside letters, digits, `_` and
 * `-` replaced by `_`; past 64 characters, cut and suffixed with a hash of
 * the reference so distinct tools keep distinct names.
 */
export function providerSafeToolName(server: string, tool: string, forceHash = false): string {
  const raw = `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");
  if (raw.length <= MAX_PROVIDER_NAME && !forceHash) return raw;
  const hash = createHash("sha256").update(`${server}/${tool}`).digest("hex").slice(0, 8);
  return `${raw.slice(0, MAX_PROVIDER_NAME - 9)}_${hash}`;
}

/** The text parts of an MCP tool result, joined by newlines. */
function textOf(result: CallToolResult): string {
  return result.content
    .flatMap((part) => (part.type === "text" ? [part.text] : []))
    .join("\n")
    .trim();
}

/**
 * What the model is given for an MCP tool result: `{ error }` when the tool
 * reported an error (`isError`), else its structured content when it has
 * some, else its text (one string) when it is all text, else its content parts.
 */
export function mcpToolOutput(result: CallToolResult): unknown {
  if (result.isError) return { error: textOf(result) || "the tool reported an error" };
  if (result.structuredContent !== undefined) return result.structuredContent;
  if (result.content.every((part) => part.type === "text")) return textOf(result);
  return result.content;
}

/**
 * Headers for one MCP tool call to a Streamable HTTP server (e.g. the
 * tenant's own token), over the config's headers; an agents module exports it
 * as `mcpHeaders`. Undefined: the config's headers only.
 */
export type McpHeadersHook = (call: {
  /** The server's name in the config. */
  server: string;
  tool: string;
  /** Who the turn acts for. */
  principal: Principal | undefined;
}) => Record<string, string> | undefined | Promise<Record<string, string> | undefined>;

/** Settings of the tools made from MCP servers. */
export interface McpToolSettings {
  /** Per-call headers (Streamable HTTP servers). */
  headers?: McpHeadersHook;
  /** A call with no answer after this long fails as a tool error the model sees. */
  callTimeoutMs: number;
  /** Interrupt the turn for the client's approval before calling (see `McpServerConfig.approval`). */
  approval?: boolean;
}

/**
 * An MCP server's tool as an agentd tool: the model sees the server's
 * `inputSchema` under a provider-safe name (and may also request it by its
 * reference `<server>/<tool>`). Input must be a JSON object; the server
 * validates the rest. A tool error, an unreachable server and a call past
 * its timeout are answered as `{ error }` the model sees (the turn goes on);
 * a cancelled or aborted turn cancels the call (the server is sent
 * `notifications/cancelled`). With `approval`, the first run interrupts the
 * turn instead of calling.
 */
export function mcpTool(
  connection: McpServerConnection,
  info: McpToolInfo,
  settings: McpToolSettings,
  name: string = providerSafeToolName(connection.name, info.name),
): Tool {
  const ref = `${connection.name}/${info.name}`;
  const description = info.description ?? info.title ?? `The tool "${info.name}" of MCP server "${connection.name}".`;
  const inputSchema = { ...info.inputSchema } as Record<string, unknown>;
  delete inputSchema.$schema;
  return {
    __agentdTool: true,
    name,
    ref,
    description,
    inputSchema: z.record(z.string(), z.unknown()),
    modelDefinition: { name, description, inputSchema },
    async run(input: Record<string, unknown>, ctx) {
      // Approved by a resume.restart (which sets `resumed`); resume.respond answers without calling.
      if (settings.approval && ctx.resumed === undefined) ctx.interrupt({ approval: { tool: ref, input } });
      try {
        const headers = await settings.headers?.({
          server: connection.name,
          tool: info.name,
          principal: ctx.principal,
        });
        const result = await connection.callTool(info.name, input, {
          signal: ctx.signal,
          timeoutMs: settings.callTimeoutMs,
          idempotencyKey: ctx.idempotencyKey,
          ...(headers ? { headers } : {}),
        });
        return mcpToolOutput(result);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        if (err instanceof McpTimeoutError)
          return { error: `MCP tool "${ref}" timed out: no answer within ${err.timeoutMs} ms` };
        return { error: `MCP tool "${ref}" failed: ${(err as Error).message}` };
      }
    },
  };
}
