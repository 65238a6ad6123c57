import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sendWebhook } from "../../src/runtime/webhooks/webhook-sender.js";
import { startWebhookReceiver, type WebhookReceiver } from "../harness/webhook-receiver.js";

describe("sendWebhook's address policy (a real receiver on loopback)", () => {
  let receiver: WebhookReceiver;
  beforeEach(async () => {
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it("refuses a loopback IP literal without allowPrivate, and sends nothing", async () => {
    const outcome = await sendWebhook(new URL(receiver.url), {}, "{}", { timeoutMs: 10_000, allowPrivate: false });
    expect(outcome).toEqual({ ok: false, error: "refused: 127.0.0.1 is a private or loopback address" });
    expect(receiver.received).toEqual([]);
  });

  it("refuses a host name that resolves to loopback without allowPrivate, and sends nothing", async () => {
    const url = new URL(`http://localhost:${receiver.port}/hook`);
    const outcome = await sendWebhook(url, {}, "{}", { timeoutMs: 10_000, allowPrivate: false });
    expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(/private or loopback/) });
    expect(receiver.received).toEqual([]);
  });

  it("delivers to loopback with allowPrivate", async () => {
    const outcome = await sendWebhook(new URL(receiver.url), {}, "{}", { timeoutMs: 10_000, allowPrivate: true });
    expect(outcome).toEqual({ ok: true, status: 204 });
    expect(receiver.received).toHaveLength(1);
  });
});
