// docs/mcp.md, run as a reader would: its Python tool server, config, prompt file and serve
// command give a prompt agent that answers the documented `call weather/forecast` line; its agents
// module (McpToolbox) serves an agent using the same server; its Python MCP client lists and calls
// `assistant` over `/mcp`. The blocks are extracted from the page, so the page cannot drift.
// What a reader fills in themselves is filled in: `python3` is the Python with `mcp` installed
// (the MCP venv), the example "docs" server's URL is a local FastMCP server, imports of
// "@agentd-dev/agentd" resolve to this checkout, and the address is the test server's.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { mcpPython, WEATHER_SERVER } from "./mcp-python.js";

const run = promisify(execFile);
const PAGE = readFileSync(join(REPO_ROOT, "docs/mcp.md"), "utf8");

/** The fenced blocks of the page in `language`, in order. */
function blocks(language: string): string[] {
  return [...PAGE.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === language).map((m) => m[2]!);
}

/** A free TCP port on loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const dir = mkdtempSync(join(tmpdir(), "agentd-mcp-docs-"));
let python: string;
let docsServer: ChildProcess | undefined;
let agentd: AgentdProcess;

beforeAll(async () => {
  python = mcpPython();
  const docsPort = await freePort();
  docsServer = spawn(python, [WEATHER_SERVER, "--http", String(docsPort)], { stdio: "ignore" });
  const [toolServer, client] = blocks("python");
  writeFileSync(join(dir, "weather.py"), toolServer!);
  writeFileSync(join(dir, "client.py"), client!);
  const config = JSON.parse(blocks("json")[0]!) as {
    mcpServers: { weather: { command: string }; docs: { url: string } };
  };
  expect(config.mcpServers.weather.command).toBe("python3");
  config.mcpServers.weather.command = python;
  config.mcpServers.docs.url = `http://127.0.0.1:${docsPort}/mcp`;
  writeFileSync(join(dir, "mcp.json"), JSON.stringify(config));
  mkdirSync(join(dir, "prompts"));
  writeFileSync(join(dir, "prompts/weather.prompt"), blocks("yaml")[0]!);
  // The agents module: the second TypeScript block (the first, the headers hook, is a fragment).
  const agentsModule = blocks("ts")[1]!.replaceAll(
    '"@agentd-dev/agentd"',
    JSON.stringify(join(REPO_ROOT, "src/index.ts")),
  );
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(join(dir, "agents.ts"), agentsModule);
  const command = blocks("sh")[0]!.trim().split(/\s+/);
  expect(command.slice(0, 2)).toEqual(["agentd", "serve"]);
  agentd = await startAgentd({ cwd: dir, args: ["agents.ts", ...command.slice(2), "--mcp"] });
}, 240_000);

afterAll(async () => {
  await agentd?.stop();
  docsServer?.kill();
});

/** The reply text of one Run on `agent`. */
async function ask(agent: string, text: string): Promise<string> {
  const { output } = await agentServiceClient(agentd.baseUrl, "grpc").run({ init: { agent }, input: textInput(text) });
  if (!output!.message) throw new Error(`the turn ended ${output!.finishReason}: ${JSON.stringify(output!.error)}`);
  return output!.message.content.map((p) => (p.kind.case === "text" ? p.kind.value : "")).join("");
}

describe("docs/mcp.md, as written", () => {
  it("the prompt agent answers the documented line with the Python server's forecast", async () => {
    const documented = /`(call weather\/forecast [^`]+)` calls the tool and answers\s+`([^`]+)`/.exec(PAGE);
    expect(documented).not.toBeNull();
    const [, line, answer] = documented!;
    // The "docs" server is reached over HTTP on the prompt's first turn (it may still be starting).
    expect(await until("the prompt agent answers", async () => ask("weather", line!))).toBe(answer);
  });

  it("the agents module's McpToolbox gives its agent the server's tools", async () => {
    expect(await ask("forecaster", 'call weather/forecast {"city":"Oslo"}')).toBe(
      'tool results: weather/forecast={"result":"Oslo: sunny, 21 C"}',
    );
  });

  it("the Python MCP client lists assistant and gets the echo with its session and snapshot IDs", async () => {
    const script = readFileSync(join(dir, "client.py"), "utf8").replace(
      "http://127.0.0.1:50051/mcp",
      `${agentd.url}/mcp`,
    );
    writeFileSync(join(dir, "client.py"), script);
    const { stdout } = await run(python, [join(dir, "client.py")], { timeout: 60_000 });
    const [tools, first] = stdout.trim().split("\n");
    expect(tools).toContain("'assistant'");
    expect(first).toMatch(/^\{'reply': 'echo: hello', 'session_id': '[^']+', 'snapshot_id': '[^']+'/);
  });
});
