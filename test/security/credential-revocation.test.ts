import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { WireChat } from "../harness/wire-chat.js";

const KEPT = "kept-token-0123456789abcdef01234";
const REVOKED = "revoked-token-0123456789abcdef012";

/** A Chat of the example assistant whose first turn has finished. */
async function openChat(server: AgentdProcess, token: string): Promise<WireChat> {
  const chat = new WireChat(clientWithToken(server.baseUrl, token), { init: { agent: "assistant" } });
  chat.sendText("first turn");
  await chat.nextTurn();
  return chat;
}

describe("revoking a token in the tokens file (SIGHUP) reaches open Chats", () => {
  let server: AgentdProcess;
  let tokensFile: string;
  beforeAll(async () => {
    tokensFile = writeTokensFile([`${KEPT} acme`, `${REVOKED} acme`]);
    server = await startAgentd({ args: ["--auth-tokens", tokensFile] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function reloadWith(lines: string[]): Promise<void> {
    writeFileSync(tokensFile, `${lines.join("\n")}\n`);
    const seen = server.logLines().length;
    server.proc.kill("SIGHUP");
    for (let i = 0; i < 200; i++) {
      if (
        server
          .logLines()
          .slice(seen)
          .some((l) => l.msg === "auth tokens reloaded")
      )
        return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('no "auth tokens reloaded" log line');
  }

  it("answers the next input of a Chat whose token was removed with UNAUTHENTICATED, while a kept token's Chat runs on", async () => {
    await reloadWith([`${KEPT} acme`, `${REVOKED} acme`]);
    const revoked = await openChat(server, REVOKED);
    const kept = await openChat(server, KEPT);
    await reloadWith([`${KEPT} acme`]);

    revoked.sendText("after revocation");
    const err = await failure(() => revoked.nextTurn());
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toContain("no longer accepted");
    expect(err.rawMessage).not.toContain(REVOKED);

    kept.sendText("still mine");
    expect((await kept.nextTurn()).turnEnd.snapshotId).not.toBe("");
    expect((await kept.finish()).output.snapshotId).not.toBe("");
  });

  it("refuses the token's Chat when its tenant changed in the reloaded file", async () => {
    await reloadWith([`${KEPT} acme`, `${REVOKED} acme svc`]);
    const chat = await openChat(server, REVOKED);
    await reloadWith([`${KEPT} acme`, `${REVOKED} globex svc`]);
    chat.sendText("other tenant now");
    expect((await failure(() => chat.nextTurn())).code).toBe(Code.Unauthenticated);
  });
});

describe("an expired JWT reaches open Chats", () => {
  const AUDIENCE = "agentd.example";
  let server: AgentdProcess;
  let key: CryptoKey;
  beforeAll(async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    key = pair.privateKey;
    const file = join(mkdtempSync(join(tmpdir(), "agentd-jwks-")), "jwks.json");
    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256" }] }));
    server = await startAgentd({ args: ["--auth-jwks", file, "--auth-audience", AUDIENCE] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const jwt = (expiresAt: number): Promise<string> =>
    new SignJWT({ tenant: "acme", sub: "u1" })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setAudience(AUDIENCE)
      .setExpirationTime(expiresAt)
      .sign(key);

  it("answers the first input after the token's exp (30 s clock tolerance included) with UNAUTHENTICATED", async () => {
    // Accepted now only thanks to the 30 s tolerance: it runs out in about 2 s.
    const expiry = Math.floor(Date.now() / 1000) - 28;
    const chat = await openChat(server, await jwt(expiry));
    await new Promise((resolve) => setTimeout(resolve, (expiry + 30) * 1000 - Date.now() + 100));
    chat.sendText("after expiry");
    const err = await failure(() => chat.nextTurn());
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toContain("expired");
  });

  it("keeps serving the inputs of a Chat whose token has not expired", async () => {
    const chat = await openChat(server, await jwt(Math.floor(Date.now() / 1000) + 3600));
    chat.sendText("second turn");
    expect((await chat.nextTurn()).turnEnd.snapshotId).not.toBe("");
    expect((await chat.finish()).output.snapshotId).not.toBe("");
  });
});
