// agentd as an MCP server (issue 51): `agentd serve --mcp` answers MCP
// (Streamable HTTP) at /mcp on its own port; the official Python MCP client
// lists and calls the served agents, with bearer tokens and tenants as for
// every other call.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { mcpPython } from "./mcp-python.js";

const run = promisify(execFile);
const CLIENT = join(REPO_ROOT, "test/mcp/clients/call_agentd.py");
const TOKEN_A = "token-a-0123456789abcdef";
const TOKEN_B = "token-b-0123456789abcdef";

let python: string;
let agentd: AgentdProcess;
let grpcA: Client<typeof AgentService>;

interface CallResult {
  isError: boolean;
  text: string;
  structured: { reply: string; session_id: string; snapshot_id: string; finish_reason: string } | null;
  progress: string[];
}

/** Runs the Python MCP client against agentd's /mcp; resolves with its JSON answer. */
async function mcp<T>(token: string, ...args: string[]): Promise<T> {
  const { stdout } = await run(python, [CLIENT, `${agentd.url}/mcp`, token, ...args], { timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as T;
}

beforeAll(async () => {
  python = mcpPython();
  const tokens = writeTokensFile([`${TOKEN_A} tenant-a alice`, `${TOKEN_B} tenant-b bob`]);
  agentd = await startAgentd({ args: ["--mcp", "--auth-tokens", tokens, "--max-message-bytes", "65536"] });
  grpcA = clientWithToken(agentd.baseUrl, TOKEN_A);
});

afterAll(async () => {
  await agentd?.stop();
});

describe("agentd serve --mcp", () => {
  it("the Python MCP client lists assistant among /mcp's tools", async () => {
    const { tools } = await mcp<{ tools: string[] }>(TOKEN_A, "list");
    expect(tools).toContain("assistant");
  });

  it("calling assistant returns the echo with session and snapshot IDs; a second call with the session ID continues it", async () => {
    const first = await mcp<CallResult>(TOKEN_A, "call", "assistant", "hello from python");
    expect(first.isError).toBe(false);
    expect(first.text).toBe("echo: hello from python");
    expect(first.structured).toMatchObject({ reply: "echo: hello from python", finish_reason: "stop" });
    expect(first.structured!.session_id).not.toBe("");
    expect(first.structured!.snapshot_id).not.toBe("");
    expect(first.progress.join("")).toBe("echo: hello from python");

    const second = await mcp<CallResult>(TOKEN_A, "call", "assistant", "and again", first.structured!.session_id);
    expect(second.structured).toMatchObject({ reply: "echo: and again", session_id: first.structured!.session_id });
    expect(second.structured!.snapshot_id).not.toBe(first.structured!.snapshot_id);
    // The session (read over gRPC by the same tenant) holds both turns.
    const { snapshot } = await grpcA.getSnapshot({ agent: "assistant", sessionId: first.structured!.session_id });
    expect(snapshotTexts(snapshot)).toEqual([
      "hello from python",
      "echo: hello from python",
      "and again",
      "echo: and again",
    ]);
  });

  it("tenant B's call cannot reach tenant A's session: NOT_FOUND as a tool error", async () => {
    const a = await mcp<CallResult>(TOKEN_A, "call", "assistant", "tenant a secret");
    const b = await mcp<CallResult>(TOKEN_B, "call", "assistant", "let me in", a.structured!.session_id);
    expect(b.isError).toBe(true);
    expect(b.text).toMatch(/^NOT_FOUND: /);
    expect(b.text).not.toContain("tenant a secret");
    // A's session is untouched.
    const { snapshot } = await grpcA.getSnapshot({ agent: "assistant", sessionId: a.structured!.session_id });
    expect(snapshotTexts(snapshot)).toEqual(["tenant a secret", "echo: tenant a secret"]);
    const err = await clientWithToken(agentd.baseUrl, TOKEN_B)
      .getSnapshot({ agent: "assistant", sessionId: a.structured!.session_id })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("a request without credentials is refused 401 with WWW-Authenticate: Bearer", async () => {
    const res = await fetch(`${agentd.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/credentials are required/);
  });

  it("bad input is refused with a JSON-RPC error: a body over --max-message-bytes 413, a body that is not JSON 400", async () => {
    const post = (body: string) =>
      fetch(`${agentd.url}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN_A}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body,
      });
    const big = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", pad: "x".repeat(70_000) }));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { message: string } }).error.message).toBe(
      "the request body is larger than 65536 bytes",
    );
    const notJson = await post("{ nope");
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { code: number } }).error.code).toBe(-32700);
    // The server still answers.
    const { tools } = await mcp<{ tools: string[] }>(TOKEN_A, "list");
    expect(tools).toContain("assistant");
  });

  it("an empty message is an MCP error naming the field, not a failed server", async () => {
    const res = await mcp<CallResult>(TOKEN_A, "call", "assistant", "");
    expect(res.isError).toBe(true);
    expect(res.text).toMatch(/message/);
  });
});
