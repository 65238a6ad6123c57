import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { GRPCURL } from "../server/test-server.js";
import { failure } from "../harness/call-failure.js";

const GOOD = "good-token-0123456789abcdef0123";
const WRONG = "wrong-token-0123456789abcdef012";
const LATER = "later-token-0123456789abcdef012";

const run = (token: string | undefined, baseUrl: string, protocol: "grpc" | "connect-h1" = "grpc") =>
  clientWithToken(baseUrl, token, protocol).run({ init: { agent: "assistant" }, input: textInput("hi") });

async function waitForLog(server: AgentdProcess, msg: string, after: number): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const line = server
      .logLines()
      .slice(after)
      .find((l) => l.msg === msg);
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no "${msg}" log line`);
}

describe("static bearer tokens (--auth-tokens)", () => {
  let server: AgentdProcess;
  let tokensFile: string;
  beforeAll(async () => {
    tokensFile = writeTokensFile(["# service accounts", "", `${GOOD} acme billing-service`]);
    server = await startAgentd({ args: ["--auth-tokens", tokensFile] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each(["grpc", "connect-h1"] as const)(
    "refuses a call without a token with UNAUTHENTICATED (%s)",
    async (protocol) => {
      const err = await failure(() => run(undefined, server.baseUrl, protocol));
      expect(err.code).toBe(Code.Unauthenticated);
      expect(err.rawMessage).toContain("authorization: Bearer");
    },
  );

  it.each(["grpc", "connect-h1"] as const)(
    "refuses an unknown token with UNAUTHENTICATED, never echoing it (%s)",
    async (protocol) => {
      const err = await failure(() => run(WRONG, server.baseUrl, protocol));
      expect(err.code).toBe(Code.Unauthenticated);
      expect(err.rawMessage).not.toContain(WRONG);
    },
  );

  it("serves a listed token as its tenant and subject, named on the call's log line but never the token", async () => {
    const { output } = await run(GOOD, server.baseUrl);
    expect(output?.finishReason).toBe(FinishReason.STOP);
    const line = await server.logLine(
      (l) => l.msg === "rpc" && l.procedure === "/agentd.v1.AgentService/Run" && l.code === "OK",
    );
    expect(line).toMatchObject({ subject: "billing-service", tenant: "acme" });
    expect(server.logs()).not.toContain(GOOD);
    expect(server.logs()).not.toContain(WRONG);
  });

  it("keeps health checks open without credentials", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const res = await health.check({ service: "" });
    expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("keeps reflection open by default (grpcurl lists the services without a token)", async () => {
    const { stdout } = await promisify(execFile)(GRPCURL, ["-plaintext", server.target, "list"]);
    expect(stdout).toContain("agentd.v1.AgentService");
  });

  it("re-reads the file on SIGHUP: new tokens work, removed ones stop, a broken file keeps the old tokens", async () => {
    writeFileSync(tokensFile, `${LATER} acme ops\n`);
    let seen = server.logLines().length;
    server.proc.kill("SIGHUP");
    expect(await waitForLog(server, "auth tokens reloaded", seen)).toMatchObject({ tokens: 1 });
    expect((await run(LATER, server.baseUrl)).output?.finishReason).toBe(FinishReason.STOP);
    expect((await failure(() => run(GOOD, server.baseUrl))).code).toBe(Code.Unauthenticated);

    writeFileSync(tokensFile, "short acme\n");
    seen = server.logLines().length;
    server.proc.kill("SIGHUP");
    const refused = await waitForLog(server, "auth tokens NOT reloaded; the previous tokens stay in force", seen);
    expect(String(refused.error)).toContain("line 1");
    expect((await run(LATER, server.baseUrl)).output?.finishReason).toBe(FinishReason.STOP);
  });
});

describe("--reflection=authenticated", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["--auth-tokens", writeTokensFile([`${GOOD} acme`]), "--reflection", "authenticated"],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses reflection without a token and serves it with one", async () => {
    const list = (extra: string[]) => promisify(execFile)(GRPCURL, ["-plaintext", ...extra, server.target, "list"]);
    await expect(list([])).rejects.toThrow(/Unauthenticated/);
    const { stdout } = await list(["-H", `authorization: Bearer ${GOOD}`]);
    expect(stdout).toContain("agentd.v1.AgentService");
  });
});

describe("a tokens file that cannot be used", () => {
  it.each([
    ["a token shorter than 16 characters", "short acme\n", "line 1: the token is shorter than 16 characters"],
    ["a line without a tenant", `${GOOD}\n`, 'line 1: expected "TOKEN TENANT [SUBJECT]"'],
    ["a token listed twice", `${GOOD} acme\n# x\n${GOOD} other\n`, "line 3: the token is listed twice"],
  ])("stops the start with exit 2, naming the line: %s", async (_name, text, message) => {
    const file = writeTokensFile([]);
    writeFileSync(file, text);
    const started = startAgentd({ args: ["--auth-tokens", file] });
    const err = (await started.then(
      () => {
        throw new Error("agentd started");
      },
      (e: Error) => e,
    )) as Error;
    expect(err.message).toContain("exited with code 2");
    expect(err.message).toContain(message);
    expect(err.message).not.toContain(GOOD);
  });
});
