import type { Logger } from "pino";
import { readMcpConfigFile } from "../tools/mcp/mcp-config.js";
import type { McpToolbox } from "../tools/mcp/mcp-toolbox.js";
import type { McpFlags } from "./mcp-args.js";

/**
 * The MCP servers of `--mcp-config` (read and checked now; a bad file throws
 * AgentError INVALID_ARGUMENT naming it), not yet started: `start()` them once
 * serving, `close()` them at shutdown. Undefined without `--mcp-config`, in
 * which case the MCP SDK is not loaded at all (a start without MCP costs
 * none of its ~100 ms of module loading).
 */
export async function mcpToolboxFromFlags(
  flags: McpFlags | undefined,
  logger: Logger,
): Promise<McpToolbox | undefined> {
  if (flags?.configFile === undefined) return undefined;
  const config = readMcpConfigFile(flags.configFile);
  const { McpToolbox } = await import("../tools/mcp/mcp-toolbox.js");
  return new McpToolbox(config, {
    logger,
    ...(flags.toolTimeoutMs !== undefined ? { callTimeoutMs: flags.toolTimeoutMs } : {}),
  });
}
