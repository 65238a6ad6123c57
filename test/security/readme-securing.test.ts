import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken } from "../harness/auth-clients.js";
import { REPO_ROOT, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { readmeShellBlocks } from "../e2e/readme-commands.js";

const exec = promisify(execFile);
const blocks = readmeShellBlocks("Securing agentd", "docs/security.md");

/** A README block split into its shell lines (continuations joined) and the flags of its `npm start --` line. */
function split(block: string): { setup: string; flags: string[] } {
  const lines = block.replace(/\\\n\s*/g, "").split("\n");
  const start = lines.find((l) => l.startsWith("npm start -- "));
  return {
    setup: lines.filter((l) => l !== start).join("\n"),
    flags: start ? start.slice("npm start -- ".length).trim().split(/\s+/) : [],
  };
}

/** Runs shell lines in `dir` with grpcurl on the PATH, the server's port instead of 50051. */
async function sh(script: string, dir: string, port?: number): Promise<string> {
  const text = port === undefined ? script : script.replaceAll("localhost:50051", `localhost:${port}`);
  const { stdout } = await exec("bash", ["-euo", "pipefail", "-c", text], {
    cwd: dir,
    env: { ...process.env, PATH: `${join(REPO_ROOT, ".tools/bin")}:${process.env.PATH}` },
  });
  return stdout;
}

let server: AgentdProcess | undefined;
let jwks: Server | undefined;
afterEach(async () => {
  await server?.stop();
  jwks?.close();
  server = undefined;
  jwks = undefined;
});

describe("docs/security.md's Securing agentd commands, as a user runs them", () => {
  it("has the tokens, JWT and mutual-TLS blocks", () => {
    expect(blocks).toHaveLength(5);
  });

  it("bearer tokens: makes a tokens file, serves it, and grpcurl calls with the token", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentd-readme-"));
    const { setup, flags } = split(blocks[0]!);
    await sh(setup, dir);
    server = await startAgentd({ args: flags, cwd: dir });
    const out = JSON.parse(await sh(blocks[1]!, dir, server.port)) as { output: { finishReason: string } };
    expect(out.output.finishReason).toBe("FINISH_REASON_STOP");
    await expect(sh(blocks[1]!.replace(/-H "authorization: Bearer \$TOKEN" /, ""), dir, server.port)).rejects.toThrow(
      /Unauthenticated/,
    );
  });

  it("JWT: the flags accept a token from that issuer for that audience, with the tenant from org_id", async () => {
    const { flags } = split(blocks[2]!);
    const keys = await generateKeyPair("ES256");
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: "k", alg: "ES256" };
    jwks = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] })),
    );
    await new Promise<void>((resolve) => jwks!.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks.json`;
    const at = flags.indexOf("--auth-jwks");
    server = await startAgentd({ args: flags.map((f, i) => (i === at + 1 ? url : f)) });
    const audience = flags[flags.indexOf("--auth-audience") + 1]!;
    const issuer = flags[flags.indexOf("--auth-issuer") + 1]!;
    const jwt = await new SignJWT({ sub: "u1", org_id: "acme" })
      .setProtectedHeader({ alg: "ES256", kid: "k" })
      .setAudience(audience)
      .setIssuer(issuer)
      .setExpirationTime("5m")
      .sign(keys.privateKey);
    const { output } = await clientWithToken(server.baseUrl, jwt).run({
      init: { agent: "assistant" },
      input: textInput("hi"),
    });
    expect(output?.finishReason).toBe(FinishReason.STOP);
    expect(await server.logLine((l) => l.procedure === "/agentd.v1.AgentService/Run")).toMatchObject({
      subject: "u1",
      tenant: "acme",
    });
  });

  it("mutual TLS: makes the certificates, serves TLS, and grpcurl and curl call with the client certificate", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentd-readme-"));
    const { setup, flags } = split(blocks[3]!);
    await sh(setup, dir);
    server = await startAgentd({ args: flags, cwd: dir });
    const [fromGrpcurl, fromCurl] = (await sh(blocks[4]!, dir, server.port))
      .split(/\n(?=\{)/)
      .map((s) => JSON.parse(s) as { output: { finishReason: string } });
    expect(fromGrpcurl!.output.finishReason).toBe("FINISH_REASON_STOP");
    expect(fromCurl!.output.finishReason).toBe("FINISH_REASON_STOP");
    const runLines = await server.logLinesMatching((l) => l.procedure === "/agentd.v1.AgentService/Run", 2);
    expect(runLines.map((l) => [l.subject, l.tenant])).toEqual([
      ["billing-service", "acme"],
      ["billing-service", "acme"],
    ]);
  });
});
