import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, type ClientProtocol } from "../../src/client/index.js";
import { writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { makeTestCertificates, type TestCertificates } from "../harness/test-certificates.js";
import { GRPCURL } from "../server/test-server.js";

const exec = promisify(execFile);
const TOKEN = "tls-token-0123456789abcdef0123";

let certs: TestCertificates;
beforeAll(() => {
  certs = makeTestCertificates("billing-service", "acme");
});

/** Two turns of one conversation on the tasks agent; how many turns it holds and its session. */
async function twoTurns(client: ReturnType<typeof createAgentClient>): Promise<{ turns: number; sessionId: string }> {
  const conversation = client.chat("tasks");
  const first = await conversation.send("buy milk");
  const second = await conversation.send("walk the dog");
  const output = await conversation.output();
  expect(second.turnIndex).toBe(first.turnIndex + 1);
  return { turns: second.turnIndex + 1, sessionId: output.sessionId };
}

describe("TLS (--tls-cert, --tls-key)", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: [
        "--tls-cert",
        certs.serverCertFile,
        "--tls-key",
        certs.serverKeyFile,
        "--auth-tokens",
        writeTokensFile([`${TOKEN} acme`]),
      ],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("announces an https:// URL", () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(server.listening.tls).toBe("on");
  });

  it.each(["grpc", "connect"] as ClientProtocol[])(
    "completes a two-turn chat from the TypeScript client over %s (HTTP/2, ALPN h2)",
    async (protocol) => {
      const client = createAgentClient(`https://localhost:${server.port}`, {
        protocol,
        token: TOKEN,
        tls: { ca: certs.ca },
      });
      expect((await twoTurns(client)).turns).toBe(2);
    },
  );

  it("runs two turns of one session from the TypeScript client over Connect on HTTP/1.1", async () => {
    const client = createAgentClient(`https://localhost:${server.port}`, {
      protocol: "connect",
      httpVersion: "1.1",
      token: TOKEN,
      tls: { ca: certs.ca },
    });
    const first = await client.run("tasks", "buy milk");
    const second = await client.run("tasks", "walk the dog", { sessionId: first.sessionId });
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.snapshotId).not.toBe(first.snapshotId);
  });

  it("completes a two-turn chat from grpcurl with -cacert, resuming by session in the second call", async () => {
    const auth = ["-H", `authorization: Bearer ${TOKEN}`, "-cacert", certs.caFile];
    const first = JSON.parse(
      (
        await exec(GRPCURL, [
          ...auth,
          "-d",
          '{"init":{"agent":"tasks"},"input":{"message":{"role":"ROLE_USER","content":[{"text":"buy milk"}]}}}',
          `localhost:${server.port}`,
          "agentd.v1.AgentService/Run",
        ])
      ).stdout,
    ) as { output: { sessionId: string; snapshotId: string } };
    const second = JSON.parse(
      (
        await exec(GRPCURL, [
          ...auth,
          "-d",
          JSON.stringify({
            init: { agent: "tasks", sessionId: first.output.sessionId },
            input: { message: { role: "ROLE_USER", content: [{ text: "walk the dog" }] } },
          }),
          `localhost:${server.port}`,
          "agentd.v1.AgentService/Run",
        ])
      ).stdout,
    ) as { output: { sessionId: string; state?: unknown } };
    expect(second.output.sessionId).toBe(first.output.sessionId);
  });

  it("completes a two-turn chat over Connect with curl --cacert", async () => {
    const call = async (body: unknown) =>
      JSON.parse(
        (
          await exec("curl", [
            "-sS",
            "--fail-with-body",
            "--cacert",
            certs.caFile,
            "-H",
            "content-type: application/json",
            "-H",
            `authorization: Bearer ${TOKEN}`,
            "-d",
            JSON.stringify(body),
            `https://localhost:${server.port}/agentd.v1.AgentService/Run`,
          ])
        ).stdout,
      ) as { output: { sessionId: string } };
    const first = await call({
      init: { agent: "tasks" },
      input: { message: { role: "ROLE_USER", content: [{ text: "buy milk" }] } },
    });
    const second = await call({
      init: { agent: "tasks", sessionId: first.output.sessionId },
      input: { message: { role: "ROLE_USER", content: [{ text: "walk the dog" }] } },
    });
    expect(second.output.sessionId).toBe(first.output.sessionId);
  });

  it("refuses cleartext on the TLS port", async () => {
    // The refusal looks like a reset connection (ECONNRESET), which the default budget retries for 30 s.
    const client = createAgentClient(`http://127.0.0.1:${server.port}`, {
      protocol: "grpc",
      token: TOKEN,
      retry: { maxElapsedMs: 2000 },
    });
    await expect(client.listAgents()).rejects.toThrow();
  });
});

describe("mutual TLS (--tls-client-ca)", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["--tls-cert", certs.serverCertFile, "--tls-key", certs.serverKeyFile, "--tls-client-ca", certs.caFile],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("serves a client certificate from the CA as its CN (subject) and O (tenant)", async () => {
    const client = createAgentClient(`https://localhost:${server.port}`, {
      protocol: "grpc",
      tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey },
    });
    expect((await twoTurns(client)).turns).toBe(2);
    const line = await server.logLine((l) => l.procedure === "/agentd.v1.AgentService/Chat" && l.code === "OK");
    expect(line).toMatchObject({ subject: certs.clientSubject, tenant: certs.clientTenant });
  });

  it("refuses a client without a certificate at the handshake", async () => {
    const client = createAgentClient(`https://localhost:${server.port}`, { protocol: "grpc", tls: { ca: certs.ca } });
    await expect(client.listAgents()).rejects.toThrow();
    await expect(
      exec(GRPCURL, ["-connect-timeout", "3", "-cacert", certs.caFile, `localhost:${server.port}`, "list"]),
    ).rejects.toThrow();
  });

  it("refuses a certificate from another CA", async () => {
    const client = createAgentClient(`https://localhost:${server.port}`, {
      protocol: "grpc",
      tls: { ca: certs.ca, cert: certs.strangerCert, key: certs.strangerKey },
      // The refusal reaches the client as an HTTP/2 stream reset, which the default budget retries for 30 s.
      retry: { maxElapsedMs: 2000 },
    });
    await expect(client.listAgents()).rejects.toThrow();
  });

  it("serves grpcurl with -cert/-key", async () => {
    const { stdout } = await exec(GRPCURL, [
      "-cacert",
      certs.caFile,
      "-cert",
      certs.clientCertFile,
      "-key",
      certs.clientKeyFile,
      `localhost:${server.port}`,
      "list",
    ]);
    expect(stdout).toContain("agentd.v1.AgentService");
  });
});
