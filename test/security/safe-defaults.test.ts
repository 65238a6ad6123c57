import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { GRPCURL } from "../server/test-server.js";

const exec = promisify(execFile);

describe("serving beyond loopback", () => {
  it("refuses to start on a non-loopback address without authentication, saying what to configure", async () => {
    const err = await startAgentd({ args: ["--host", "0.0.0.0"] }).then(
      () => new Error("agentd started"),
      (e: Error) => e,
    );
    expect(err.message).toContain("exited with code 2");
    expect(err.message).toContain("refusing to serve 0.0.0.0 without authentication");
    expect(err.message).toContain("--auth-tokens");
    expect(err.message).toContain("--insecure");
  });

  it("starts there with --insecure", async () => {
    const server = await startAgentd({ args: ["--host", "0.0.0.0", "--insecure"] });
    expect(server.listening).toMatchObject({ host: "0.0.0.0", auth: "none" });
    expect(await server.stop()).toBe(0);
  });
});

describe("a loopback server without authentication (DNS rebinding)", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const connectCall = (host: string) =>
    exec("curl", [
      "-sS",
      "-o",
      "-",
      "-w",
      "\\n%{http_code}",
      "-H",
      `host: ${host}`,
      "-H",
      "content-type: application/json",
      "-d",
      "{}",
      `http://127.0.0.1:${server.port}/agentd.v1.AgentService/ListAgents`,
    ]).then(({ stdout }) => {
      const lines = stdout.trim().split("\n");
      return { status: Number(lines.at(-1)), body: lines.slice(0, -1).join("\n") };
    });

  it("refuses a Connect call whose Host is another name with PERMISSION_DENIED", async () => {
    const res = await connectCall("attacker.example");
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ code: "permission_denied" });
    expect(res.body).toContain("not a loopback name");
  });

  it("refuses a gRPC call whose :authority is another name with PERMISSION_DENIED", async () => {
    const err = await exec(GRPCURL, [
      "-plaintext",
      "-authority",
      "attacker.example:80",
      "-d",
      "{}",
      server.target,
      "agentd.v1.AgentService/ListAgents",
    ]).then(
      () => new Error("the call succeeded"),
      (e: { stderr: string }) => new Error(e.stderr),
    );
    expect(err.message).toContain("PermissionDenied");
  });

  it("answers health checks whatever their Host", async () => {
    const { stdout } = await exec("curl", [
      "-sS",
      "-H",
      "host: attacker.example",
      "-H",
      "content-type: application/json",
      "-d",
      "{}",
      `http://127.0.0.1:${server.port}/grpc.health.v1.Health/Check`,
    ]);
    expect(JSON.parse(stdout)).toEqual({ status: "SERVING" });
  });

  it.each(["localhost", "127.0.0.1", "[::1]", "app.localhost"])("serves calls addressed to %s", async (host) => {
    const res = await connectCall(`${host}:${server.port}`);
    expect(res.status).toBe(200);
    expect(res.body).toContain("assistant");
  });
});

describe("a loopback server with --insecure (behind a proxy that forwards its own Host)", () => {
  it("serves calls addressed to any name", async () => {
    const server = await startAgentd({ args: ["--insecure"] });
    try {
      const { stdout } = await exec("curl", [
        "-sS",
        "-H",
        "host: agentd.internal",
        "-H",
        "content-type: application/json",
        "-d",
        "{}",
        `http://127.0.0.1:${server.port}/agentd.v1.AgentService/ListAgents`,
      ]);
      expect(stdout).toContain("assistant");
    } finally {
      await server.stop();
    }
  });
});
