// Per-tenant headers of MCP tool calls (issue 51): an agents module's
// `mcpHeaders` hook sets headers per call from the caller's principal, and a
// Python FastMCP server over Streamable HTTP sees them.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { mcpPython, WEATHER_SERVER } from "./mcp-python.js";

const TOKEN_A = "token-a-0123456789abcdef";
const TOKEN_B = "token-b-0123456789abcdef";
let httpServer: ChildProcess | undefined;
let agentd: AgentdProcess;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The reply of the `who` prompt agent to `call web/whoami {}`, as `token`'s tenant. */
async function whoami(token: string): Promise<string> {
  const { output } = await clientWithToken(agentd.baseUrl, token).run({
    init: { agent: "who" },
    input: textInput("call web/whoami {}"),
  });
  return String(output!.message!.content[0]!.kind.value);
}

beforeAll(async () => {
  const python = mcpPython();
  const port = await freePort();
  httpServer = spawn(python, [WEATHER_SERVER, "--http", String(port)], { stdio: "ignore" });
  const dir = mkdtempSync(join(tmpdir(), "agentd-mcp-headers-"));
  writeFileSync(
    join(dir, "mcp.json"),
    JSON.stringify({ mcpServers: { web: { url: `http://127.0.0.1:${port}/mcp`, headers: { "X-Tenant": "config" } } } }),
  );
  writeFileSync(join(dir, "who.prompt"), "---\nmodel: scripted\ntools: [web/whoami]\n---\nWho.\n");
  const tokens = writeTokensFile([`${TOKEN_A} tenant-a alice`, `${TOKEN_B} tenant-b bob`]);
  agentd = await startAgentd({
    args: [
      "test/mcp/fixtures/mcp-headers.ts",
      "--prompts",
      dir,
      "--mcp-config",
      join(dir, "mcp.json"),
      "--auth-tokens",
      tokens,
    ],
    examples: "cli-default",
  });
});

afterAll(async () => {
  await agentd?.stop();
  httpServer?.kill();
});

describe("mcpHeaders (an agents module's per-call headers)", () => {
  it("each tenant's MCP tool call carries that tenant's header, over the config's", async () => {
    // The HTTP server may still be starting: agentd reconnects with backoff.
    const a = await until("the HTTP MCP server answers", async () => {
      const text = await whoami(TOKEN_A);
      return text.includes('"result"') ? text : undefined;
    });
    expect(a).toBe('tool results: web/whoami={"result":"tenant-a"}');
    expect(await whoami(TOKEN_B)).toBe('tool results: web/whoami={"result":"tenant-b"}');
  });
});
