// Tools from MCP servers (issue 51), over the wire: a real agentd serving a
// prompt agent on the offline scripted model, with `--mcp-config` naming a
// Python FastMCP server over stdio (started and supervised by agentd) and the
// same server over Streamable HTTP.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "@connectrpc/connect";
import type { AgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { agentInputToWire, messageFromWire } from "../../src/protocol/index.js";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { until } from "../harness/until.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { mcpPython, WEATHER_SERVER } from "./mcp-python.js";

const dir = mkdtempSync(join(tmpdir(), "agentd-mcp-tools-"));
const events = join(dir, "events.log");
let python: string;
let httpServer: ChildProcess | undefined;
let httpPort: number;
let agentd: AgentdProcess;
let client: Client<typeof AgentService>;

/** A free TCP port on loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The lines the weather server recorded (`started <tag>`, `cancelled <tag>`). */
function recorded(): string[] {
  try {
    return readFileSync(events, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/** The text of a unary Run's reply on the prompt agent `weather`. */
async function ask(text: string): Promise<string> {
  const { output } = await client.run({ init: { agent: "weather" }, input: textInput(text) });
  return output!.message!.content.map((p) => (p.kind.case === "text" ? p.kind.value : "")).join("");
}

beforeAll(async () => {
  python = mcpPython();
  httpPort = await freePort();
  httpServer = spawn(python, [WEATHER_SERVER, "--http", String(httpPort)], { stdio: "ignore" });
  writeFileSync(
    join(dir, "mcp.json"),
    JSON.stringify({
      mcpServers: {
        weather: { command: python, args: [WEATHER_SERVER], env: { WEATHER_EVENTS: events } },
        guarded: { command: python, args: [WEATHER_SERVER], approval: ["forecast"] },
        web: { url: `http://127.0.0.1:${httpPort}/mcp`, headers: { "X-Test": "1" } },
      },
    }),
  );
  writeFileSync(
    join(dir, "weather.prompt"),
    "---\nmodel: scripted\ntools: [weather/*, web/forecast, guarded/forecast]\n---\nWeather.\n",
  );
  writeFileSync(
    join(dir, "module-mcp.json"),
    JSON.stringify({ mcpServers: { weather: { command: python, args: [WEATHER_SERVER] } } }),
  );
  agentd = await startAgentd({
    args: [
      "test/mcp/fixtures/mcp-agents.ts",
      "--prompts",
      dir,
      "--mcp-config",
      join(dir, "mcp.json"),
      "--mcp-tool-timeout",
      "8s",
    ],
    env: { MCP_AGENTS_CONFIG: join(dir, "module-mcp.json") },
    examples: "cli-default",
  });
  client = agentServiceClient(agentd.baseUrl, "grpc");
});

afterAll(async () => {
  await agentd?.stop();
  httpServer?.kill();
});

describe("tools from MCP servers (--mcp-config)", () => {
  it("a prompt agent on the scripted model answers `call weather/forecast` with the stdio server's result", async () => {
    expect(await ask('call weather/forecast {"city":"Oslo"}')).toMatch(
      /^tool results: weather\/forecast=\{"result":"Oslo: sunny, 21 C \(pid \d+\)"\}$/,
    );
  });

  it("the model may use the provider-safe name; a tool error is a tool result the model sees, the turn goes on", async () => {
    expect(await ask('call weather__forecast {"city":"Rome"}')).toContain('"result":"Rome: sunny, 21 C');
    const { output } = await client.run({
      init: { agent: "weather" },
      input: textInput('call weather/fail {"city":"Atlantis"}'),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    expect(output!.message!.content[0]!.kind.value).toMatch(/weather\/fail=\{"error":".*no forecast for Atlantis/);
  });

  it("a Streamable HTTP server's tool answers too", async () => {
    // The HTTP server may still be starting: agentd connects on first use and retries with backoff.
    const reply = await until("the HTTP MCP server answers", async () => {
      const text = await ask('call web/forecast {"city":"Bergen"}');
      return text.includes('"result"') ? text : undefined;
    });
    expect(reply).toMatch(/^tool results: web\/forecast=\{"result":"Bergen: sunny, 21 C/);
  });

  it("a restarted Streamable HTTP server is reconnected (a new MCP session) for the next calls", async () => {
    await until("the HTTP MCP server answers", async () =>
      (await ask('call web/forecast {"city":"Bergen"}')).includes('"result"'),
    );
    const old = httpServer!;
    await new Promise((resolve) => {
      old.once("exit", resolve);
      old.kill();
    });
    httpServer = spawn(python, [WEATHER_SERVER, "--http", String(httpPort)], { stdio: "ignore" });
    await until("the new HTTP server listens", () =>
      fetch(`http://127.0.0.1:${httpPort}/mcp`).then(
        () => true,
        () => false,
      ),
    );
    const reply = await until(
      "a call reaches the new server",
      async () => {
        const text = await ask('call web/forecast {"city":"Stavanger"}');
        return text.includes('"result"') ? text : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(reply).toMatch(/^tool results: web\/forecast=\{"result":"Stavanger: sunny/);
  });

  it("the stdio server's stderr goes to agentd's log", async () => {
    const line = await agentd.logLine((l) => l.msg === "MCP server stderr" && l.mcpServer === "weather");
    expect(String(line.stderr)).toMatch(/weather server starting/);
  });

  it("a hanging tool fails the tool call at its timeout (the server is told to cancel), not the server", async () => {
    const { output } = await client.run({
      init: { agent: "weather" },
      input: textInput('call weather/hang {"tag":"t1"}'),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    expect(output!.message!.content[0]!.kind.value).toBe(
      'tool results: weather/hang={"error":"MCP tool \\"weather/hang\\" timed out: no answer within 8000 ms"}',
    );
    await until("the server saw the cancellation", () => recorded().includes("cancelled t1"));
    expect(await ask('call weather/forecast {"city":"Oslo"}')).toContain('"result":"Oslo: sunny');
  });

  it("a turn's cancel cancels its MCP tool call", async () => {
    const chat = new WireChat(client, {
      init: { agent: "weather" },
      input: textInput('call weather/hang {"tag":"c1"}'),
    });
    await until("the tool call reached the server", () => recorded().includes("started c1"));
    chat.send({ input: { cancel: true, requestId: "cancel-c1" } as AgentInput });
    // Well before the 8 s tool timeout, whose own cancellation would also reach the server.
    await until("the server saw the cancellation", () => recorded().includes("cancelled c1"), { timeoutMs: 5000 });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.ABORTED);
    chat.sendText('call weather/forecast {"city":"Oslo"}');
    expect(chunksText((await chat.nextTurn()).chunks)).toContain("Oslo: sunny");
    await chat.finish();
  });

  it("an Abort of detached work cancels its MCP tool call", async () => {
    const { output } = await client.run({
      init: { agent: "weather" },
      input: { ...textInput('call weather/hang {"tag":"a1"}'), detach: true },
    });
    await until("the tool call reached the server", () => recorded().includes("started a1"));
    const aborted = await client.abort({ agent: "weather", snapshotId: output!.snapshotId });
    expect(aborted.status).toBe(SnapshotStatus.ABORTED);
    await until("the server saw the cancellation", () => recorded().includes("cancelled a1"), { timeoutMs: 5000 });
  });

  it("the tool list is refreshed when the server sends notifications/tools/list_changed", async () => {
    expect(await ask("call weather/late {}")).toMatch(/weather\/late=\{"error":"unknown tool/);
    expect(await ask("call weather/add_tool {}")).toContain('"result":"added"');
    const reply = await until("the next turn sees the new tool", async () => {
      const text = await ask("call weather/late {}");
      return text.includes("late tool here") ? text : undefined;
    });
    expect(reply).toBe('tool results: weather/late={"result":"late tool here"}');
  });

  it("a call carries its idempotency key in _meta.idempotencyKey: a UUID, another one for another call", async () => {
    const key = /weather\/idempotency_key=\{"result":"([^"]+)"\}/;
    const first = key.exec(await ask("call weather/idempotency_key {}"))?.[1];
    const second = key.exec(await ask("call weather/idempotency_key {}"))?.[1];
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(second).toMatch(/^[0-9a-f]{8}-/);
    expect(second).not.toBe(first);
  });

  it("a tool configured with approval interrupts the turn; resume.restart approves and calls it", async () => {
    const { output } = await client.run({
      init: { agent: "weather" },
      input: textInput('call guarded/forecast {"city":"Oslo"}'),
    });
    expect(output!.finishReason).toBe(FinishReason.INTERRUPTED);
    const part = messageFromWire(output!.message!).content[0]!;
    expect(part.toolRequest).toMatchObject({ name: "guarded/forecast", input: { city: "Oslo" } });
    expect(part.metadata).toEqual({
      interrupt: { approval: { tool: "guarded/forecast", input: { city: "Oslo" } } },
      toolCall: expect.objectContaining({ tool: "guarded/forecast" }),
    });
    const approved = await client.run({
      init: { agent: "weather", sessionId: output!.sessionId },
      input: agentInputToWire({ resume: { restart: [{ toolRequest: { name: "guarded/forecast" } }] } }),
    });
    expect(approved.output!.finishReason).toBe(FinishReason.STOP);
    expect(approved.output!.message!.content[0]!.kind.value).toMatch(
      /^tool results: guarded\/forecast=\{"result":"Oslo: sunny/,
    );
  });

  it("a crashed stdio server fails that tool call and is restarted for the next turn", async () => {
    const before = await ask("call weather/pid {}");
    const oldPid = /"result":(\d+)/.exec(before)![1];
    expect(await ask("call weather/crash {}")).toMatch(
      /weather\/crash=\{"error":"MCP tool \\"weather\/crash\\" failed: .*Connection closed/,
    );
    await agentd.logLine((l) => l.msg === "MCP server connection closed; restarting" && l.mcpServer === "weather");
    // Supervised: restarted after its backoff, before anything calls it again.
    await agentd.logLinesMatching((l) => l.msg === "MCP server connected" && l.mcpServer === "weather", 2, 15_000);
    const after = await ask("call weather/pid {}");
    const newPid = /"result":(\d+)/.exec(after)![1];
    expect(newPid).not.toBe(oldPid);
    expect(await ask('call weather/forecast {"city":"Oslo"}')).toContain(`(pid ${newPid})`);
  });
});

describe("MCP tools in an agents module", () => {
  it("a custom agent given McpToolbox tools calls them over the wire", async () => {
    const { output } = await client.run({
      init: { agent: "forecaster" },
      input: textInput('call weather/forecast {"city":"Tromso"}'),
    });
    expect(output!.message!.content[0]!.kind.value).toMatch(
      /^tool results: weather\/forecast=\{"result":"Tromso: sunny/,
    );
  });
});

describe("--mcp-config at start", () => {
  it("a prompt naming a server the config does not have stops the start, naming both", async () => {
    const bad = mkdtempSync(join(tmpdir(), "agentd-mcp-bad-"));
    writeFileSync(join(bad, "mcp.json"), JSON.stringify({ mcpServers: {} }));
    writeFileSync(join(bad, "p.prompt"), "---\nmodel: scripted\ntools: [nope/forecast]\n---\nx\n");
    const err = await startAgentd({ args: ["--prompts", bad, "--mcp-config", join(bad, "mcp.json")] }).then(
      (p) => p.stop().then(() => new Error("started")),
      (e: Error) => e,
    );
    expect(err.message).toMatch(/tool "nope\/forecast" names MCP server "nope", which --mcp-config does not define/);
  });
});
