import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";

// Server-streaming calls carry no later inputs to re-check the credential at:
// the server re-checks it once per heartbeat (--heartbeat-interval-ms) while
// the stream is open, streaming or not.
const KEPT = "kept-token-0123456789abcdef01234";
const REVOKED = "revoked-token-0123456789abcdef012";
const HEARTBEAT_MS = 300;
/** 60 words, one every 200 ms: a turn of about 12 s, far longer than any wait below. */
const LONG_TURN = textInput(Array.from({ length: 60 }, (_, i) => `w${i}`).join(" "), { echoDelayMs: 200 });

/** An open stream: `first` resolves with its first message, `ended` with how it ended (undefined: OK) and when. */
interface OpenStream {
  first: Promise<void>;
  ended: Promise<{ err: ConnectError | undefined; at: number }>;
  messages: () => number;
}

function follow(stream: AsyncIterable<unknown>): OpenStream {
  let count = 0;
  let markFirst!: () => void;
  const first = new Promise<void>((resolve) => (markFirst = resolve));
  const ended = (async () => {
    try {
      for await (const _ of stream) {
        count++;
        markFirst();
      }
      return { err: undefined, at: performance.now() };
    } catch (err) {
      return { err: ConnectError.from(err), at: performance.now() };
    } finally {
      markFirst();
    }
  })();
  return { first, ended, messages: () => count };
}

describe("revoking a token ends its open server streams within one heartbeat", () => {
  let server: AgentdProcess;
  let tokensFile: string;
  const stop = new AbortController();
  beforeAll(async () => {
    tokensFile = writeTokensFile([`${KEPT} acme`, `${REVOKED} acme`]);
    server = await startAgentd({
      args: ["--auth-tokens", tokensFile, "--heartbeat-interval-ms", String(HEARTBEAT_MS)],
    });
  });
  afterAll(async () => {
    stop.abort();
    await server?.stop("SIGKILL"); // its detached jobs still run: a graceful stop would wait out the drain (10 s)
  });

  async function reload(lines: string[]): Promise<void> {
    writeFileSync(tokensFile, `${lines.join("\n")}\n`);
    const seen = server.logLines().length;
    server.proc.kill("SIGHUP");
    const deadline = performance.now() + 10_000;
    while (performance.now() < deadline) {
      const reloaded = server
        .logLines()
        .slice(seen)
        .some((l) => l.msg === "auth tokens reloaded");
      if (reloaded) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('no "auth tokens reloaded" log line');
  }

  /** RunStream, AttachInvocation and WatchSnapshot of `token`, each streaming (its first message arrived). */
  async function openStreams(token: string): Promise<Record<"runStream" | "attach" | "watch", OpenStream>> {
    const client = clientWithToken(server.baseUrl, token);
    const options = { signal: stop.signal };
    const runStream = follow(client.runStream({ init: { agent: "assistant" }, input: LONG_TURN }, options));
    const { output } = await client.run({ init: { agent: "assistant" }, input: { ...LONG_TURN, detach: true } });
    const ref = { agent: "assistant", snapshotId: output!.snapshotId };
    const attach = follow(client.attachInvocation(ref, options));
    const watch = follow(client.watchSnapshot(ref, options));
    await Promise.all([runStream.first, attach.first, watch.first]);
    return { runStream, attach, watch };
  }

  it("ends RunStream, AttachInvocation and WatchSnapshot UNAUTHENTICATED, while the kept token's streams go on", async () => {
    const revoked = await openStreams(REVOKED);
    const kept = await openStreams(KEPT);
    for (const stream of [...Object.values(revoked), ...Object.values(kept)])
      expect(stream.messages()).toBeGreaterThan(0);

    await reload([`${KEPT} acme`]);
    for (const [name, stream] of Object.entries(revoked)) {
      const { err } = await stream.ended;
      expect(err?.code, name).toBe(Code.Unauthenticated);
      expect(err?.rawMessage, name).toContain("no longer accepted");
      expect(err?.rawMessage, name).not.toContain(REVOKED);
      // Within a heartbeat (300 ms) of the reload on an idle machine; the outcome is what tells: a stream
      // the revocation missed would have run to the end of its 12 s turn and ended OK, not UNAUTHENTICATED.
    }

    // The kept token's streams are still open and still streaming.
    const countsAfter = { runStream: kept.runStream.messages(), attach: kept.attach.messages() };
    const deadline = performance.now() + 10_000;
    while (
      (kept.runStream.messages() <= countsAfter.runStream || kept.attach.messages() <= countsAfter.attach) &&
      performance.now() < deadline
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(kept.runStream.messages()).toBeGreaterThan(countsAfter.runStream);
    expect(kept.attach.messages()).toBeGreaterThan(countsAfter.attach);
    const racing = await Promise.race([
      kept.watch.ended.then(() => "ended"),
      new Promise((resolve) => setTimeout(() => resolve("open"), 3 * HEARTBEAT_MS)),
    ]);
    expect(racing).toBe("open");
  });
});

describe("an expiring JWT ends its open server stream within one heartbeat of its exp", () => {
  const AUDIENCE = "agentd.example";
  let server: AgentdProcess;
  let sign: (exp: number) => Promise<string>;
  beforeAll(async () => {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const file = join(mkdtempSync(join(tmpdir(), "agentd-jwks-")), "jwks.json");
    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256" }] }));
    sign = (exp) =>
      new SignJWT({ tenant: "acme", sub: "u1" })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setAudience(AUDIENCE)
        .setExpirationTime(exp)
        .sign(pair.privateKey);
    server = await startAgentd({
      args: ["--auth-jwks", file, "--auth-audience", AUDIENCE, "--heartbeat-interval-ms", String(HEARTBEAT_MS)],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("ends a RunStream UNAUTHENTICATED once the token's exp (30 s tolerance included) has passed, not before", async () => {
    // Accepted now only thanks to the 30 s clock tolerance: it runs out in about 3 s.
    const expiry = Math.floor(Date.now() / 1000) - 27;
    const expiresAt = performance.now() + ((expiry + 30) * 1000 - Date.now());
    const client = clientWithToken(server.baseUrl, await sign(expiry));
    const stream = follow(client.runStream({ init: { agent: "assistant" }, input: LONG_TURN }));
    await stream.first;
    const { err, at } = await stream.ended;
    expect(err?.code).toBe(Code.Unauthenticated);
    expect(err?.rawMessage).toContain("expired");
    expect(at).toBeGreaterThanOrEqual(expiresAt - 50);
    // How soon after: told by the outcome (a stream the expiry missed would have ended OK with its 12 s turn).
    expect(stream.messages()).toBeGreaterThan(1);
  });
});
