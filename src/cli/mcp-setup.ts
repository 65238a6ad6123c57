import type { Logger } from "pino";
import { readMcpConfigFile } from "../tools/mcp/mcp-config.js";
import { McpToolbox } from "../tools/mcp/mcp-toolbox.js";
import type { McpFlags } from "./mcp-args.js";

/**
 * The MCP servers of `--mcp-config` (read and checked now; a bad file throws
 * AgentError INVALID_ARGUMENT naming it), not yet started: `start()` them once
 * serving, `close()` them at shutdown. Undefined without `--mcp-config`.
 */
export function mcpToolboxFromFlags(flags: McpFlags | undefined, logger: Logger): McpToolbox | undefined {
  if (flags?.configFile === undefined) return undefined;
  const config = readMcpConfigFile(flags.configFile);
  return new McpToolbox(config, {
    logger,
    ...(flags.toolTimeoutMs !== undefined ? { callTimeoutMs: flags.toolTimeoutMs } : {}),
  });
}
