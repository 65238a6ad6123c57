/** Makes the CLI's usage error (kept out of this module so it does not import args.ts). */
type UsageErrorFactory = (message: string) => Error;

/** The MCP flags of `agentd serve`, as given (the config file is read at start). */
export interface McpFlags {
  /** `--mcp-config`: the `mcpServers` JSON file whose tools agents may use. */
  configFile?: string;
  /** `--mcp-tool-timeout`: one MCP tool call's timeout (ms), when given. */
  toolTimeoutMs?: number;
  /** `--mcp`: answer MCP (Streamable HTTP) at `/mcp`, one tool per served agent. */
  serve: boolean;
}

/** The `parseArgs` options of the MCP flags. */
export const MCP_OPTIONS = {
  "mcp-config": { type: "string" },
  "mcp-tool-timeout": { type: "string" },
  mcp: { type: "boolean" },
} as const;

/** The MCP part of `agentd --help`. */
export const MCP_USAGE = `MCP (see docs/mcp.md):
  --mcp-config <file>         MCP servers whose tools agents may use ("mcpServers" JSON: stdio
                              "command"/"args"/"env", or Streamable HTTP "url"/"headers"); a prompt
                              names them in "tools:" as <server>/<tool> or <server>/*
  --mcp-tool-timeout <d>      an MCP tool call with no answer by then fails as a tool error the
                              model sees (default 60s)
  --mcp                       answer MCP (Streamable HTTP) at /mcp on the same port: one tool per
                              served agent, taking "message" and optional "session_id"
`;

/**
 * The MCP flags among `values`; `duration` parses a duration flag. Undefined
 * when no MCP flag is given.
 */
export function mcpFlags(
  values: Record<string, unknown>,
  duration: (flag: string, raw: string) => number,
  usage: UsageErrorFactory,
): McpFlags | undefined {
  const file = values["mcp-config"];
  const timeout = values["mcp-tool-timeout"];
  const serve = values.mcp === true;
  if (file === undefined && timeout === undefined && !serve) return undefined;
  if (typeof file === "string" && file.trim() === "") throw usage("--mcp-config needs a file");
  if (timeout !== undefined && file === undefined) throw usage("--mcp-tool-timeout only applies with --mcp-config");
  const timeoutMs = typeof timeout === "string" ? duration("mcp-tool-timeout", timeout) : undefined;
  if (timeoutMs !== undefined && timeoutMs < 1) throw usage("--mcp-tool-timeout must be at least 1ms");
  return {
    ...(typeof file === "string" ? { configFile: file } : {}),
    ...(timeoutMs !== undefined ? { toolTimeoutMs: timeoutMs } : {}),
    serve,
  };
}
