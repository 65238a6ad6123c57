import { pino, type Logger } from "pino";
import { AgentError } from "../../errors/agent-error.js";
import type { Tool } from "../define-tool.js";
import type { ToolResolver } from "../tool-resolver.js";
import type { McpServersConfig } from "./mcp-config.js";
import { McpServerConnection, type McpRestartBackoff } from "./mcp-server-connection.js";
import { mcpTool, providerSafeToolName, type McpHeadersHook, type McpToolSettings } from "./mcp-tool.js";

/** Default per-call timeout of MCP tools: 60 s. */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;

/** Options of {@link McpToolbox}. */
export interface McpToolboxOptions extends Partial<McpToolSettings> {
  /** Where server stderr, exits and restarts are logged; default JSON lines on stdout (pino). */
  logger?: Logger;
  /** Restart backoff of stdio servers. */
  backoff?: McpRestartBackoff;
}

/** A tool reference `<server>/<tool>` or `<server>/*`. */
const TOOL_REF = /^([^/]+)\/(.+)$/;

/**
 * The MCP servers of an `--mcp-config`, connected (stdio servers started)
 * by {@link McpToolbox.start} or on first use, answering tool references `<server>/<tool>` and
 * `<server>/*` (every tool of the server, in its listing order) with
 * agentd tools (see {@link mcpTool}).
 */
export class McpToolbox implements ToolResolver {
  private readonly servers = new Map<string, McpServerConnection>();
  private readonly approvals = new Map<string, true | string[]>();
  private settings: McpToolSettings;

  constructor(config: McpServersConfig, options: McpToolboxOptions = {}) {
    this.settings = {
      callTimeoutMs: options.callTimeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS,
      ...(options.headers ? { headers: options.headers } : {}),
    };
    const logger = options.logger ?? pino();
    for (const [name, server] of config) if (server.approval) this.approvals.set(name, server.approval);
    for (const [name, server] of config)
      this.servers.set(name, new McpServerConnection(name, server, logger, options.backoff));
  }

  /** Starts every server now (stdio processes start; failures are logged and retried). Else each starts on first use. */
  start(): void {
    for (const server of this.servers.values()) server.start();
  }

  /** Sets the per-call headers hook (an agents module's `mcpHeaders`) for the tools resolved from now on. */
  useHeaders(hook: McpHeadersHook): void {
    this.settings = { ...this.settings, headers: hook };
  }

  /** The configured server names. */
  serverNames(): string[] {
    return [...this.servers.keys()];
  }

  /** A name with a `/` is an MCP tool reference. */
  handles(name: string): boolean {
    return name.includes("/");
  }

  /** Throws AgentError INVALID_ARGUMENT when `ref` is malformed or names a server the config does not have. */
  check(ref: string, where: string): void {
    this.server(ref, where);
  }

  private server(ref: string, where: string): { server: McpServerConnection; tool: string } {
    const match = TOOL_REF.exec(ref);
    if (!match)
      throw new AgentError("INVALID_ARGUMENT", `${where}: tool "${ref}" must be "<server>/<tool>" or "<server>/*"`);
    const server = this.servers.get(match[1]!);
    if (!server)
      throw new AgentError(
        "INVALID_ARGUMENT",
        `${where}: tool "${ref}" names MCP server "${match[1]}", which --mcp-config does not define (it has: ${this.serverNames().join(", ") || "none"})`,
      );
    return { server, tool: match[2]! };
  }

  /**
   * The tools of `refs`: lists each server's tools (cached) and picks the
   * named ones. Rejects AgentError UNAVAILABLE when a server cannot be
   * reached, INVALID_ARGUMENT when a server has no such tool.
   */
  async resolve(refs: readonly string[], where: string): Promise<Tool[]> {
    const tools: Tool[] = [];
    const names = new Set<string>();
    for (const ref of refs) {
      const { server, tool } = this.server(ref, where);
      const listed = await server.listTools();
      const picked = tool === "*" ? listed : listed.filter((t) => t.name === tool);
      if (picked.length === 0 && tool !== "*")
        throw new AgentError(
          "INVALID_ARGUMENT",
          `${where}: MCP server "${server.name}" has no tool "${tool}" (it has: ${listed.map((t) => t.name).join(", ") || "none"})`,
        );
      for (const info of picked) {
        if (tools.some((t) => t.ref === `${server.name}/${info.name}`)) continue;
        let name = providerSafeToolName(server.name, info.name);
        if (names.has(name)) name = providerSafeToolName(server.name, info.name, true);
        names.add(name);
        const approval = this.approvals.get(server.name);
        const guarded = approval === true || (approval?.includes(info.name) ?? false);
        tools.push(mcpTool(server, info, guarded ? { ...this.settings, approval: true } : this.settings, name));
      }
    }
    return tools;
  }

  /** Stops every server (stdio processes end) and their restarts. */
  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.close()));
  }
}
