import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "../harness/agentd-process.js";

/** The venv scripts/setup-mcp-python.sh installs the Python MCP SDK into (AGENTD_MCP_VENV overrides it). */
export function mcpVenv(): string {
  return process.env.AGENTD_MCP_VENV ?? join(REPO_ROOT, ".tools/mcp-venv");
}

/**
 * The Python of the MCP venv, after running scripts/setup-mcp-python.sh
 * (idempotent: a no-op once the pinned lock is installed).
 */
export function mcpPython(): string {
  execFileSync("bash", [join(REPO_ROOT, "scripts/setup-mcp-python.sh")], { stdio: "inherit" });
  return join(mcpVenv(), "bin/python");
}

/** The weather FastMCP server of the MCP tests. */
export const WEATHER_SERVER = join(REPO_ROOT, "test/mcp/servers/weather_server.py");
