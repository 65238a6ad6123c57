import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { failure } from "../harness/call-failure.js";

const AUDIENCE = "agentd.example";
const ISSUER = "https://issuer.example";

let signingKey: CryptoKey;
let strangerKey: CryptoKey;
let jwks: { keys: JWK[] };

beforeAll(async () => {
  const trusted = await generateKeyPair("ES256", { extractable: true });
  signingKey = trusted.privateKey;
  strangerKey = (await generateKeyPair("ES256")).privateKey;
  jwks = { keys: [{ ...(await exportJWK(trusted.publicKey)), kid: "k1", alg: "ES256", use: "sig" }] };
});

/** A JWT with these claims, signed by `key` (the trusted key by default), valid for an hour unless `exp` says otherwise. */
function token(
  claims: Record<string, unknown>,
  options: { key?: CryptoKey; audience?: string; issuer?: string; expiresAt?: number } = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: "k1" })
    .setIssuedAt()
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuer(options.issuer ?? ISSUER)
    .setExpirationTime(options.expiresAt ?? Math.floor(Date.now() / 1000) + 3600)
    .sign(options.key ?? signingKey);
}

const run = (server: AgentdProcess, jwt: string) =>
  clientWithToken(server.baseUrl, jwt).run({ init: { agent: "assistant" }, input: textInput("hi") });

describe("JWT bearer tokens from a JWKS file", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), "agentd-jwks-")), "jwks.json");
    writeFileSync(file, JSON.stringify(jwks));
    server = await startAgentd({
      args: [
        "--auth-jwks",
        file,
        "--auth-audience",
        AUDIENCE,
        "--auth-issuer",
        ISSUER,
        "--auth-tenant-claim",
        "org_id",
      ],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("serves a valid token as its sub and the configured tenant claim", async () => {
    const jwt = await token({ sub: "user-42", org_id: "globex" });
    const { output } = await run(server, jwt);
    expect(output?.finishReason).toBe(FinishReason.STOP);
    const line = await server.logLine((l) => l.procedure === "/agentd.v1.AgentService/Run" && l.code === "OK");
    expect(line).toMatchObject({ subject: "user-42", tenant: "globex" });
    expect(server.logs()).not.toContain(jwt);
  });

  it.each([
    [
      "an expired token",
      () => token({ sub: "u", org_id: "globex" }, { expiresAt: Math.floor(Date.now() / 1000) - 600 }),
      "expired",
    ],
    [
      "a token for another audience",
      () => token({ sub: "u", org_id: "globex" }, { audience: "other-service" }),
      '"aud" claim',
    ],
    [
      "a token from another issuer",
      () => token({ sub: "u", org_id: "globex" }, { issuer: "https://evil.example" }),
      '"iss" claim',
    ],
    [
      "a token signed by an untrusted key",
      () => token({ sub: "u", org_id: "globex" }, { key: strangerKey }),
      "not signed by a trusted key",
    ],
    ["a token without the tenant claim", () => token({ sub: "u", tenant: "globex" }), 'no "org_id" claim'],
    [
      "a token whose tenant claim holds NUL",
      () => token({ sub: "u", org_id: "globex\u0000" }),
      '"org_id" claim holds the character U+0000 (NUL)',
    ],
    ["a token that is not a JWT", async () => "not-a-jwt-at-all-0123456789", "credentials were not accepted"],
  ])("refuses %s with UNAUTHENTICATED saying why", async (_name, make, reason) => {
    const jwt = await make();
    const err = await failure(() => run(server, jwt));
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toContain(reason);
    expect(err.rawMessage).not.toContain(jwt);
  });
});

describe("JWT bearer tokens from a JWKS URL", () => {
  let server: AgentdProcess;
  let jwksServer: Server;
  let fetches = 0;
  beforeAll(async () => {
    jwksServer = createServer((_req, res) => {
      fetches++;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
    });
    await new Promise<void>((resolve) => jwksServer.listen(0, "127.0.0.1", resolve));
    const { port } = jwksServer.address() as { port: number };
    server = await startAgentd({
      args: ["--auth-jwks", `http://127.0.0.1:${port}/.well-known/jwks.json`, "--auth-audience", AUDIENCE],
    });
  });
  afterAll(async () => {
    await server?.stop();
    jwksServer?.close();
  });

  it("fetches the keys and serves a valid token as its tenant claim (default claim name: tenant)", async () => {
    const { output } = await run(server, await token({ sub: "svc", tenant: "initech" }));
    expect(output?.finishReason).toBe(FinishReason.STOP);
    expect(fetches).toBeGreaterThan(0);
    const line = await server.logLine((l) => l.procedure === "/agentd.v1.AgentService/Run" && l.code === "OK");
    expect(line).toMatchObject({ subject: "svc", tenant: "initech" });
  });
});

describe("JWT flags", () => {
  it("--auth-jwks without --auth-audience stops the start, saying why", async () => {
    const err = await startAgentd({ args: ["--auth-jwks", "/dev/null"] }).then(
      () => new Error("agentd started"),
      (e: Error) => e,
    );
    expect(err.message).toContain("exited with code 2");
    expect(err.message).toContain("--auth-jwks needs --auth-audience");
  });
});
