import { readFileSync } from "node:fs";
import { AgentError } from "../../errors/agent-error.js";

/** An MCP server agentd starts and supervises, speaking MCP over its stdin/stdout. */
export interface McpStdioServerConfig {
  kind: "stdio";
  /** The executable (looked up on PATH). */
  command: string;
  args: string[];
  /** Variables added to agentd's environment for the server. */
  env: Record<string, string>;
  /** Working directory; default agentd's. */
  cwd?: string;
}

/** An MCP server agentd connects to over Streamable HTTP. */
export interface McpHttpServerConfig {
  kind: "http";
  url: string;
  /** Headers sent with every request (e.g. `Authorization`). */
  headers: Record<string, string>;
}

/** One entry of `mcpServers`: a server, and which of its tools need the client's approval. */
export type McpServerConfig = (McpStdioServerConfig | McpHttpServerConfig) & {
  /**
   * `true` (every tool) or tool names: such a tool call first interrupts the
   * turn (`{"approval": {"tool", "input"}}`); the client approves with
   * `resume.restart` or answers in its place with `resume.respond`.
   */
  approval?: true | string[];
};

/** The servers of an `--mcp-config` file, by name. */
export type McpServersConfig = Map<string, McpServerConfig>;

/** A server name: what comes before the `/` of a tool reference. */
const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

function fail(origin: string, what: string): never {
  throw new AgentError("INVALID_ARGUMENT", `MCP config ${origin}: ${what}`);
}

function stringRecord(value: unknown, origin: string, where: string): Record<string, string> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value))
    fail(origin, `${where} must be an object of strings`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") fail(origin, `${where}.${k} must be a string`);
    out[k] = v;
  }
  return out;
}

/** Header names must be HTTP tokens and values Latin-1 without line breaks (what fetch can send). */
function httpHeaders(headers: Record<string, string>, origin: string, where: string): Record<string, string> {
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) fail(origin, `${where}: "${name}" is not a valid header name`);
    if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(value))
      fail(origin, `${where}.${name} may hold only Latin-1 characters without line breaks (no "…", no newline)`);
  }
  return headers;
}

/**
 * Checks the `mcpServers` JSON shape (the one MCP clients share): each server
 * has either `command` (with optional `args`, `env`, `cwd`) for a stdio
 * server agentd starts, or `url` (with optional `headers`) for a Streamable
 * HTTP server. Server names are 1-32 letters, digits, `_` or `-` (they prefix
 * tool names). Throws AgentError INVALID_ARGUMENT naming `origin` and the
 * offending entry.
 */
export function parseMcpConfig(json: unknown, origin: string): McpServersConfig {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    fail(origin, 'expected an object {"mcpServers": {...}}');
  const servers = (json as Record<string, unknown>).mcpServers;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers))
    fail(origin, 'expected "mcpServers": an object of servers by name');
  const out: McpServersConfig = new Map();
  for (const [name, raw] of Object.entries(servers)) {
    if (!SERVER_NAME.test(name)) fail(origin, `server name "${name}" must be 1-32 letters, digits, "_" or "-"`);
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      fail(origin, `server "${name}" must be an object`);
    const entry = raw as Record<string, unknown>;
    const where = `mcpServers.${name}`;
    const approval = entry.approval;
    if (
      approval !== undefined &&
      approval !== true &&
      approval !== false &&
      !(Array.isArray(approval) && approval.every((t) => typeof t === "string"))
    )
      fail(origin, `${where}.approval must be true or an array of tool names`);
    const needsApproval = approval === true || Array.isArray(approval) ? { approval: approval as true | string[] } : {};
    if (typeof entry.command === "string" && entry.url === undefined) {
      if (entry.command.trim() === "") fail(origin, `${where}.command must not be empty`);
      const args = entry.args ?? [];
      if (!Array.isArray(args) || args.some((a) => typeof a !== "string"))
        fail(origin, `${where}.args must be an array of strings`);
      if (entry.cwd !== undefined && typeof entry.cwd !== "string") fail(origin, `${where}.cwd must be a string`);
      out.set(name, {
        kind: "stdio",
        command: entry.command,
        args: args as string[],
        env: stringRecord(entry.env, origin, `${where}.env`),
        ...(typeof entry.cwd === "string" ? { cwd: entry.cwd } : {}),
        ...needsApproval,
      });
    } else if (typeof entry.url === "string" && entry.command === undefined) {
      let url: URL;
      try {
        url = new URL(entry.url);
      } catch {
        fail(origin, `${where}.url is not a URL`);
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") fail(origin, `${where}.url must be http(s)`);
      out.set(name, {
        kind: "http",
        url: url.href,
        headers: httpHeaders(stringRecord(entry.headers, origin, `${where}.headers`), origin, `${where}.headers`),
        ...needsApproval,
      });
    } else {
      fail(origin, `${where} needs either "command" (a stdio server) or "url" (a Streamable HTTP server)`);
    }
  }
  return out;
}

/** Reads and checks an `--mcp-config` file (see {@link parseMcpConfig}); a missing or non-JSON file is INVALID_ARGUMENT. */
export function readMcpConfigFile(path: string): McpServersConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new AgentError("INVALID_ARGUMENT", `MCP config "${path}" cannot be read: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AgentError("INVALID_ARGUMENT", `MCP config "${path}" is not JSON: ${(err as Error).message}`);
  }
  return parseMcpConfig(json, `"${path}"`);
}
