import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd } from "../harness/agentd-process.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { until } from "../harness/until.js";
import { startWebhookReceiver } from "../harness/webhook-receiver.js";
import { textInput } from "../harness/wire-chat.js";

// Tenant B's webhook receiver (the server's --webhook-url) never answers; tenant
// A ("acme") has its own endpoint (test/fixtures/webhook-endpoints.ts). B's
// deliveries hang until --webhook-timeout (30 s here); A's must not wait for them.
const A = "tenant-a-token-0123456789abcdef0123";
const B = "tenant-b-token-0123456789abcdef0123";
/** The bound for A's deliveries while B's receiver hangs. */
const A_P99_BOUND_MS = 1_000;

async function secretFile(secret: string): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), "agentd-whsec-")), "secrets");
  await writeFile(file, `${secret}\n`);
  return file;
}

it("A's webhook deliveries stay under 1 s p99 while B's receiver hangs, and B's endpoint holds at most 4 attempts", async () => {
  const [hanging, acme] = await Promise.all([startWebhookReceiver(), startWebhookReceiver()]);
  hanging.answers.push(...Array.from({ length: 1000 }, () => 0)); // never answers
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const agentd = await startAgentd({
    args: [
      "test/fixtures/webhook-endpoints.ts",
      "--auth-tokens",
      writeTokensFile([`${A} acme`, `${B} globex`]),
      "--webhook-url",
      hanging.url,
      "--webhook-secret-file",
      await secretFile(secret),
      "--webhook-allow-private",
      "--webhook-timeout",
      "30s",
    ],
    env: { ACME_WEBHOOK_URL: acme.url, ACME_WEBHOOK_SECRET: secret },
  });
  const job = async (token: string, text: string): Promise<void> => {
    const res = await clientWithToken(agentd.baseUrl, token).run({
      init: { agent: "assistant" },
      input: { ...textInput(text, { echoDelayMs: 1 }), detach: true },
    });
    expect(res.output?.finishReason).toBe(FinishReason.DETACHED);
  };
  try {
    // B queues 40 events; its receiver takes the first ones and never answers.
    await Promise.all(Array.from({ length: 40 }, (_, i) => job(B, `b ${i}`)));
    await until("B's receiver hanging on its first deliveries", () => hanging.received.length >= 4);

    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      await job(A, `a ${i}`);
      await until(`A's delivery ${i}`, () => acme.received.length > i, { timeoutMs: 60_000, intervalMs: 5 });
      latencies.push(performance.now() - started);
    }
    latencies.sort((x, y) => x - y);
    const p99 = latencies[Math.ceil(0.99 * latencies.length) - 1]!;
    console.log(
      `A's deliveries while B's receiver hangs: p50 ${latencies[4]!.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`,
    );
    expect(p99).toBeLessThan(A_P99_BOUND_MS);
    // Per-endpoint concurrency: B's dead receiver holds 4 attempts, not the dispatcher.
    expect(hanging.received.length).toBe(4);
  } finally {
    await Promise.all([hanging.close(), acme.close()]); // the hanging attempts fail at once
    await agentd.stop();
  }
});
