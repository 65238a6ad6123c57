/**
 * `agentd serve ./my-agents.ts` from a checkout, for a TypeScript agents module of a
 * CommonJS package (npm init's default) outside the repository, with no agentd in its
 * node_modules and no build: the module's `import "@agentd-dev/agentd"` resolves to the copy the
 * CLI runs, and the AgentErrors it throws keep their codes.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

const MODULE = `
import { AgentError, defineCustomAgent, generateModelTurn, type Authenticate } from "@agentd-dev/agentd";

export const authenticate: Authenticate = async ({ headers }) => {
  const key = headers.get("x-api-key");
  if (key === null) return null;
  if (key === "revoked") throw new AgentError("PERMISSION_DENIED", "this API key was revoked");
  return { subject: "user-1", tenant: "acme" };
};

export const echoer = defineCustomAgent({
  name: "echoer",
  store: "default",
  turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
});

export const keyless = defineCustomAgent({
  name: "keyless",
  store: "default",
  turn: (_input, ctx) => generateModelTurn(ctx, "openai/gpt-4o-mini"),
});
`;

const INPUT = { message: { role: "ROLE_USER", content: [{ text: "hi" }] } };

async function run(
  server: AgentdProcess,
  apiKey: string,
  agent = "echoer",
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/agentd.v1.AgentService/Run`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify({ init: { agent }, input: INPUT }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("an agents module outside the checkout that imports agentd", () => {
  let dir: string;
  let server: AgentdProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "agentd-cjs-module-"));
    await writeFile(join(dir, "package.json"), JSON.stringify({ name: "my-app", version: "1.0.0" }));
    await writeFile(join(dir, "my-agents.ts"), MODULE);
    server = await startAgentd({
      viaBin: true,
      cwd: dir,
      examples: "cli-default",
      args: ["./my-agents.ts", "--store", "memory:"],
      env: { OPENAI_API_KEY: "" },
    });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("serves the module's agent", async () => {
    const { status, json } = await run(server, "ok");
    expect(status).toBe(200);
    expect(json).toMatchObject({ output: { message: { content: [{ text: "echo: hi" }] } } });
  });

  it("reports a missing provider key as FAILED_PRECONDITION naming the variable", async () => {
    const { status, json } = await run(server, "ok", "keyless");
    expect(status).toBe(200);
    expect(json).toMatchObject({
      output: { finishReason: "FINISH_REASON_FAILED", error: { status: "FAILED_PRECONDITION" } },
    });
    expect(JSON.stringify(json)).toContain("OPENAI_API_KEY");
  });

  it("answers its authenticate hook's AgentError with that error's code", async () => {
    const { status, json } = await run(server, "revoked");
    expect(status).toBe(403);
    expect(json).toEqual({ code: "permission_denied", message: "this API key was revoked" });
  });
});
