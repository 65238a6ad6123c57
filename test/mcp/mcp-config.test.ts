// The `--mcp-config` file and the MCP flags: bad input is refused with a
// message naming the file, the entry and the fix.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";
import { parseMcpConfig, readMcpConfigFile } from "../../src/tools/mcp/mcp-config.js";
import { providerSafeToolName } from "../../src/tools/mcp/mcp-tool.js";

describe("mcpServers config", () => {
  it("reads stdio and Streamable HTTP servers", () => {
    const config = parseMcpConfig(
      {
        mcpServers: {
          weather: { command: "python3", args: ["weather.py"], env: { UNITS: "metric" } },
          docs: { url: "https://docs.example.com/mcp", headers: { Authorization: "Bearer x" } },
        },
      },
      "test",
    );
    expect(config.get("weather")).toEqual({
      kind: "stdio",
      command: "python3",
      args: ["weather.py"],
      env: { UNITS: "metric" },
    });
    expect(parseMcpConfig({ mcpServers: { g: { command: "x", approval: ["rm"] } } }, "t").get("g")).toMatchObject({
      approval: ["rm"],
    });
    expect(config.get("docs")).toEqual({
      kind: "http",
      url: "https://docs.example.com/mcp",
      headers: { Authorization: "Bearer x" },
    });
  });

  it.each([
    [{}, /expected "mcpServers"/],
    [{ mcpServers: { "we/ather": { command: "x" } } }, /server name "we\/ather" must be 1-32 letters/],
    [{ mcpServers: { w: {} } }, /mcpServers.w needs either "command" \(a stdio server\) or "url"/],
    [{ mcpServers: { w: { command: "x", url: "http://h/mcp" } } }, /needs either "command"/],
    [{ mcpServers: { w: { command: "x", args: "a b" } } }, /mcpServers.w.args must be an array of strings/],
    [{ mcpServers: { w: { command: "x", env: { A: 1 } } } }, /mcpServers.w.env.A must be a string/],
    [{ mcpServers: { w: { url: "ftp://h/mcp" } } }, /mcpServers.w.url must be http\(s\)/],
    [
      { mcpServers: { w: { url: "http://h/mcp", headers: { Authorization: "Bearer …" } } } },
      /mcpServers.w.headers.Authorization may hold only Latin-1 characters/,
    ],
    [{ mcpServers: { w: { url: "http://h/mcp", headers: { "X Y": "1" } } } }, /"X Y" is not a valid header name/],
    [{ mcpServers: { w: { url: "not a url" } } }, /mcpServers.w.url is not a URL/],
    [{ mcpServers: { w: { command: "x", approval: "all" } } }, /mcpServers.w.approval must be true or an array/],
  ])("refuses %j with INVALID_ARGUMENT naming the entry", (json, message) => {
    expect(() => parseMcpConfig(json, '"mcp.json"')).toThrow(message);
    expect(() => parseMcpConfig(json, '"mcp.json"')).toThrow(/^MCP config "mcp.json": /);
  });

  it("a missing or non-JSON file names the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentd-mcp-config-"));
    expect(() => readMcpConfigFile(join(dir, "none.json"))).toThrow(/none\.json" cannot be read/);
    writeFileSync(join(dir, "bad.json"), "{ nope");
    expect(() => readMcpConfigFile(join(dir, "bad.json"))).toThrow(/bad\.json" is not JSON/);
  });
});

describe("provider-safe tool names", () => {
  it("are <server>__<tool> with other characters replaced, at most 64 characters, distinct when cut", () => {
    expect(providerSafeToolName("weather", "forecast")).toBe("weather__forecast");
    expect(providerSafeToolName("docs", "search.v2 beta")).toBe("docs__search_v2_beta");
    const long1 = providerSafeToolName("s", "x".repeat(80) + "1");
    const long2 = providerSafeToolName("s", "x".repeat(80) + "2");
    expect(long1).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(long1).not.toBe(long2);
  });
});

describe("MCP flags", () => {
  const serve = (...argv: string[]) => parseCommandLine(["serve", ...argv], {});

  it("parses --mcp-config, --mcp-tool-timeout and --mcp", () => {
    const command = serve("--mcp-config", "mcp.json", "--mcp-tool-timeout", "90s", "--mcp");
    expect(command.kind === "serve" && command.config.mcp).toEqual({
      configFile: "mcp.json",
      toolTimeoutMs: 90_000,
      serve: true,
    });
    const none = serve();
    expect(none.kind === "serve" && none.config.mcp).toBeUndefined();
  });

  it("refuses --mcp-tool-timeout without --mcp-config, and a bad duration", () => {
    expect(() => serve("--mcp-tool-timeout", "5s")).toThrow(UsageError);
    expect(() => serve("--mcp-tool-timeout", "5s")).toThrow(/only applies with --mcp-config/);
    expect(() => serve("--mcp-config", "m.json", "--mcp-tool-timeout", "soon")).toThrow(/must be a duration/);
  });
});
