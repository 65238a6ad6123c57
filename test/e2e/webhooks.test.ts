import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { MongoClient } from "mongodb";
import { mongoConfigFromUri } from "../../stores/store-from-uri.js";
import { WebhookDeliveryState } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { freePort } from "../harness/caller-trace.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { until } from "../harness/until.js";
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from "../harness/webhook-receiver.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

/** A fresh `whsec_` secret. */
const newSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`;

async function secretFile(...secrets: string[]): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), "agentd-whsec-")), "secrets");
  await writeFile(file, `${secrets.join("\n")}\n`);
  return file;
}

/** Flags of a server that sends webhooks to `url`, signed with the secrets in `file`, loopback allowed. */
const webhookArgs = (url: string, file: string): string[] => [
  "--webhook-url",
  url,
  "--webhook-secret-file",
  file,
  "--webhook-allow-private",
  "--webhook-timeout",
  "1s",
];

/** Runs a detached job on `agentd` (as the caller of `token`, if given) and returns its snapshot ID (the row that ends). */
async function detachedJob(agentd: AgentdProcess, text = "background job", token?: string): Promise<string> {
  const client = token ? clientWithToken(agentd.baseUrl, token) : agentServiceClient(agentd.baseUrl, "grpc");
  const res = await client.run({
    init: { agent: "assistant" },
    input: { ...textInput(text, { echoDelayMs: 30 }), detach: true },
  });
  expect(res.output?.finishReason).toBe(FinishReason.DETACHED);
  return res.output!.snapshotId;
}

/** The `webhook-id` of every delivery `receiver` got, in arrival order. */
const deliveredIds = (receiver: WebhookReceiver): string[] =>
  receiver.received.map((d) => String(d.headers["webhook-id"]));

describe("webhooks on one instance", () => {
  let receiver: WebhookReceiver;
  let agentd: AgentdProcess;
  let metricsPort: number;
  const secrets = [newSecret(), newSecret()];
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    metricsPort = await freePort();
    agentd = await startAgentd({
      args: [...webhookArgs(receiver.url, await secretFile(...secrets)), "--metrics-port", String(metricsPort)],
    });
  });
  afterAll(async () => {
    await agentd?.stop();
    await receiver?.close();
  });
  afterEach(() => receiver.received.splice(0));

  it("a detached job that completes is announced once, signed, with the payload fields", async () => {
    const snapshotId = await detachedJob(agentd);
    const [delivery] = await until("the delivery", () => receiver.received.length > 0 && receiver.received);
    const payload = verifyWebhook(secrets[0]!, delivery!) as {
      type: string;
      timestamp: string;
      data: Record<string, unknown>;
    };
    expect(delivery!.headers["webhook-id"]).toBe(`msg_${snapshotId}`);
    expect(payload.type).toBe("invocation.completed");
    expect(payload.data).toMatchObject({
      agent: "assistant",
      snapshot_id: snapshotId,
      status: "completed",
      finish_reason: "stop",
      error: null,
      tenant: "",
    });
    expect(typeof payload.data.session_id).toBe("string");
    expect(Number.isNaN(Date.parse(payload.timestamp))).toBe(false);
  });

  it("a 503 is retried with the same webhook-id and body until a 2xx", async () => {
    receiver.answers.push(503);
    const snapshotId = await detachedJob(agentd);
    const both = await until("two attempts", () => receiver.received.length >= 2 && receiver.received, {
      timeoutMs: 15_000,
    });
    expect(both.map((d) => [d.headers["webhook-id"], d.answered])).toEqual([
      [`msg_${snapshotId}`, 503],
      [`msg_${snapshotId}`, 204],
    ]);
    expect(both[1]!.body).toBe(both[0]!.body);
    for (const d of both) verifyWebhook(secrets[0]!, d);
    expect(await agentd.settledLogs()).not.toContain("receiver says no");
  });

  it("deleting a session announces session.deleted with its agent, labels and head snapshot", async () => {
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    const { output } = await client.run({
      init: { agent: "assistant", labels: { team: "blue" } },
      input: textInput("hi"),
    });
    expect((await client.deleteSession({ sessionId: output!.sessionId })).deleted).toBe(true);
    const [delivery] = await until("the delivery", () => receiver.received.length > 0 && receiver.received);
    const payload = verifyWebhook(secrets[0]!, delivery!) as { type: string; data: Record<string, unknown> };
    expect(delivery!.headers["webhook-id"]).toBe(`msg_${output!.sessionId}_deleted`);
    expect([payload.type, payload.data]).toEqual([
      "session.deleted",
      expect.objectContaining({
        agent: "assistant",
        session_id: output!.sessionId,
        snapshot_id: output!.snapshotId,
        status: "deleted",
        labels: { team: "blue" },
      }),
    ]);
  });

  it("a redirect is not followed: the attempt fails and is retried at the configured URL", async () => {
    const elsewhere = await startWebhookReceiver();
    try {
      receiver.redirectTo = elsewhere.url;
      receiver.answers.push(302);
      const snapshotId = await detachedJob(agentd);
      const both = await until("the retry", () => receiver.received.length >= 2 && receiver.received, {
        timeoutMs: 15_000,
      });
      expect(both.map((d) => [d.headers["webhook-id"], d.answered])).toEqual([
        [`msg_${snapshotId}`, 302],
        [`msg_${snapshotId}`, 204],
      ]);
      expect(elsewhere.received).toEqual([]);
    } finally {
      receiver.redirectTo = undefined;
      await elsewhere.close();
    }
  });

  it("an attempt the receiver never answers is cut by --webhook-timeout and retried", async () => {
    receiver.answers.push(0);
    const snapshotId = await detachedJob(agentd);
    const both = await until("the retry", () => receiver.received.length >= 2 && receiver.received, {
      timeoutMs: 15_000,
    });
    expect(both.map((d) => [d.headers["webhook-id"], d.answered])).toEqual([
      [`msg_${snapshotId}`, 0],
      [`msg_${snapshotId}`, 204],
    ]);
    const log = await agentd.logLine(
      (l) => l.msg === "webhook attempt failed; retrying" && l.webhookId === `msg_${snapshotId}`,
    );
    expect(log.error).toBe("timed out after 1000 ms");
  });

  it("counts deliveries and retries and reports the outbox lag as metrics", async () => {
    receiver.answers.push(503);
    await detachedJob(agentd);
    await until("two attempts", () => receiver.received.length >= 2, { timeoutMs: 15_000 });
    const text = await until("the counters", async () => {
      const body = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return /^agentd_webhook_retries(_total)?\{[^}]*\} [1-9]/m.test(body) && body;
    });
    expect(text).toMatch(
      /^agentd_webhook_deliveries(_total)?\{[^}]*agentd_webhook_type="invocation\.completed"[^}]*\} [1-9]/m,
    );
    expect(text).toMatch(/^agentd_webhook_outbox_lag(_seconds)?(\{[^}]*\})? \d/m);
  });

  it("with two secrets (rotation) each one verifies the delivery on its own", async () => {
    await detachedJob(agentd);
    const [delivery] = await until("the delivery", () => receiver.received.length > 0 && receiver.received);
    expect(String(delivery!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(verifyWebhook(secrets[0]!, delivery!)).toBeTruthy();
    expect(verifyWebhook(secrets[1]!, delivery!)).toBeTruthy();
    expect(() => verifyWebhook(newSecret(), delivery!)).toThrow();
  });

  it("ListWebhookDeliveries lists the delivered events of the caller's tenant, newest first, paged", async () => {
    const first = await detachedJob(agentd, "one");
    const second = await detachedJob(agentd, "two");
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    await until("both delivered", async () => {
      const { deliveries } = await client.listWebhookDeliveries({ state: WebhookDeliveryState.DELIVERED });
      const ids = deliveries.map((d) => d.snapshotId);
      return ids.includes(first) && ids.includes(second);
    });
    const page = await client.listWebhookDeliveries({ pageSize: 1 });
    expect(page.deliveries.map((d) => [d.snapshotId, d.state, d.url])).toEqual([
      [second, WebhookDeliveryState.DELIVERED, receiver.url],
    ]);
    const next = await client.listWebhookDeliveries({ pageSize: 1, pageToken: page.nextPageToken });
    expect(next.deliveries.map((d) => d.snapshotId)).toEqual([first]);
    const bad = await client.listWebhookDeliveries({ pageToken: `${page.nextPageToken}x` }).catch((e) => e);
    expect(ConnectError.from(bad).code).toBe(Code.InvalidArgument);
  });

  it("never logs a secret", async () => {
    const logs = await agentd.settledLogs();
    for (const secret of secrets) {
      expect(logs).not.toContain(secret);
      expect(logs).not.toContain(secret.slice("whsec_".length));
    }
  });
});

describe("per-tenant webhook endpoints (an agents module's webhookEndpoint)", () => {
  it("a tenant the hook names gets its events at its own endpoint, signed with its own secret; the others at --webhook-url; each lists only its own", async () => {
    const [serverReceiver, acmeReceiver] = await Promise.all([startWebhookReceiver(), startWebhookReceiver()]);
    const [serverSecret, acmeSecret] = [newSecret(), newSecret()];
    const tokens = writeTokensFile(["tok-acme-0123456789abcdef acme", "tok-globex-0123456789abcdef globex"]);
    const agentd = await startAgentd({
      args: [
        "test/fixtures/webhook-endpoints.ts",
        "--auth-tokens",
        tokens,
        ...webhookArgs(serverReceiver.url, await secretFile(serverSecret)),
      ],
      env: { ACME_WEBHOOK_URL: acmeReceiver.url, ACME_WEBHOOK_SECRET: acmeSecret },
    });
    try {
      const acmeJob = await detachedJob(agentd, "for acme", "tok-acme-0123456789abcdef");
      const globexJob = await detachedJob(agentd, "for globex", "tok-globex-0123456789abcdef");
      const [toAcme] = await until("acme's delivery", () => acmeReceiver.received.length > 0 && acmeReceiver.received);
      const [toServer] = await until(
        "globex's delivery",
        () => serverReceiver.received.length > 0 && serverReceiver.received,
      );
      expect([toAcme!.headers["webhook-id"], toServer!.headers["webhook-id"]]).toEqual([
        `msg_${acmeJob}`,
        `msg_${globexJob}`,
      ]);
      expect((verifyWebhook(acmeSecret, toAcme!) as { data: { tenant: string } }).data.tenant).toBe("acme");
      expect(() => verifyWebhook(serverSecret, toAcme!)).toThrow();
      expect((verifyWebhook(serverSecret, toServer!) as { data: { tenant: string } }).data.tenant).toBe("globex");
      const listed = await clientWithToken(agentd.baseUrl, "tok-acme-0123456789abcdef").listWebhookDeliveries({});
      expect(listed.deliveries.map((d) => [d.snapshotId, d.url])).toEqual([[acmeJob, acmeReceiver.url]]);
      expect(await agentd.settledLogs()).not.toContain(acmeSecret);
    } finally {
      await agentd.stop();
      await Promise.all([serverReceiver.close(), acmeReceiver.close()]);
    }
  });
});

describe("webhook configuration", () => {
  it("ListWebhookDeliveries without --webhook-url is FAILED_PRECONDITION", async () => {
    const agentd = await startAgentd();
    try {
      const err = await agentServiceClient(agentd.baseUrl, "grpc")
        .listWebhookDeliveries({})
        .catch((e) => e);
      expect(ConnectError.from(err).code).toBe(Code.FailedPrecondition);
    } finally {
      await agentd.stop();
    }
  });
});

describe.each(Object.keys(sharedStores))("webhooks on a shared %s store", (kind) => {
  let shared: SharedStore;
  beforeAll(async () => {
    shared = await sharedStores[kind]!();
  });
  afterAll(async () => {
    await shared?.stop();
  });

  it("an event whose receiver was down when the job ended is delivered after agentd is SIGKILLed and restarted", async () => {
    const secret = newSecret();
    const file = await secretFile(secret);
    const down = await startWebhookReceiver();
    const url = down.url;
    await down.close(); // nothing listens there now: attempts are refused
    const first = await startAgentd({ args: ["--store", shared.uri, ...webhookArgs(url, file)] });
    let snapshotId: string;
    try {
      snapshotId = await detachedJob(first);
      await first.logLine((l) => l.msg === "webhook attempt failed; retrying", 15_000);
    } finally {
      await first.stop("SIGKILL");
    }
    const receiver = await startWebhookReceiver(down.port);
    const second = await startAgentd({ args: ["--store", shared.uri, ...webhookArgs(url, file)] });
    try {
      const [delivery] = await until(
        "the delivery after the restart",
        () => receiver.received.length > 0 && receiver.received,
        {
          timeoutMs: 20_000,
        },
      );
      expect(delivery!.headers["webhook-id"]).toBe(`msg_${snapshotId}`);
      expect((verifyWebhook(secret, delivery!) as { data: { snapshot_id: string } }).data.snapshot_id).toBe(snapshotId);
    } finally {
      await second.stop();
      await receiver.close();
    }
  });

  it("a session that expires (--session-ttl) is announced once as session.expired, signed, with its agent and labels", async () => {
    const secret = newSecret();
    const receiver = await startWebhookReceiver();
    const agentd = await startAgentd({
      args: ["--store", shared.uri, ...webhookArgs(receiver.url, await secretFile(secret)), "--session-ttl", "1s"],
    });
    try {
      const { output } = await agentServiceClient(agentd.baseUrl, "grpc").run({
        init: { agent: "assistant", labels: { team: "blue" } },
        input: textInput("hi"),
      });
      const [delivery] = await until("the delivery", () => receiver.received.length > 0 && receiver.received, {
        timeoutMs: 15_000,
      });
      const payload = verifyWebhook(secret, delivery!) as { type: string; data: Record<string, unknown> };
      expect(delivery!.headers["webhook-id"]).toBe(`msg_${output!.sessionId}_expired`);
      expect([payload.type, payload.data]).toEqual([
        "session.expired",
        expect.objectContaining({
          agent: "assistant",
          session_id: output!.sessionId,
          snapshot_id: output!.snapshotId,
          status: "expired",
          tenant: "",
          labels: { team: "blue" },
        }),
      ]);
      // A later session's expiry is announced only by a sweep after the first announcement: that sweep found nothing more.
      const later = await agentServiceClient(agentd.baseUrl, "grpc").run({
        init: { agent: "assistant" },
        input: textInput("later"),
      });
      await until("the later session's delivery", () => receiver.received.length > 1, { timeoutMs: 15_000 });
      expect(receiver.received.map((d) => d.headers["webhook-id"])).toEqual([
        `msg_${output!.sessionId}_expired`,
        `msg_${later.output!.sessionId}_expired`,
      ]);
    } finally {
      await agentd.stop();
      await receiver.close();
    }
  });

  // Declared for MongoDB only (a test declared and skipped elsewhere would be reported as skipped).
  if (kind === "mongodb")
    it("with webhooks on, MongoDB's TTL index removes a head only an hour after it expires (the sweep expires it first)", async () => {
      const agentd = await startAgentd({
        args: ["--store", shared.uri, ...webhookArgs("http://127.0.0.1:1/hook", await secretFile(newSecret()))],
      });
      const { uri, database, collectionPrefix } = mongoConfigFromUri(shared.uri);
      const mongo = new MongoClient(uri);
      try {
        const { output } = await agentServiceClient(agentd.baseUrl, "grpc").run({
          init: { agent: "assistant", ttl: { seconds: 600n } },
          input: textInput("hi"),
        });
        const head = await mongo
          .db(database)
          .collection(`${collectionPrefix}heads`)
          .findOne({ _id: output!.sessionId as never });
        expect((head!.expireAt as Date).getTime() - (head!.expiresAt as number)).toBe(3600_000);
      } finally {
        await mongo.close();
        await agentd.stop();
      }
    });

  it("two instances sweeping the same expired sessions announce each expiry exactly once between them", async () => {
    const file = await secretFile(newSecret());
    const receiver = await startWebhookReceiver();
    const instances = await Promise.all(
      ["A", "B"].map((id) =>
        startAgentd({
          args: ["--store", shared.uri, ...webhookArgs(receiver.url, file), "--instance-id", id, "--session-ttl", "1s"],
        }),
      ),
    );
    try {
      const sessions = await Promise.all(
        Array.from({ length: 4 }, async (_, i) => {
          const client = agentServiceClient(instances[i % 2]!.baseUrl, "grpc");
          return (await client.run({ init: { agent: "assistant" }, input: textInput(`hi ${i}`) })).output!.sessionId;
        }),
      );
      await until("four deliveries", () => receiver.received.length >= 4, { timeoutMs: 20_000 });
      // Each instance then announces a later session: its sweeps after the four deliveries found nothing more of theirs.
      const later = await Promise.all(
        instances.map(async (agentd) => {
          const client = agentServiceClient(agentd.baseUrl, "grpc");
          return (await client.run({ init: { agent: "assistant" }, input: textInput("later") })).output!.sessionId;
        }),
      );
      const laterIds = later.map((id) => `msg_${id}_expired`);
      await until("the later sessions' deliveries", () => laterIds.every((id) => deliveredIds(receiver).includes(id)), {
        timeoutMs: 20_000,
      });
      expect(deliveredIds(receiver).sort()).toEqual([...sessions, ...later].map((id) => `msg_${id}_expired`).sort());
    } finally {
      await Promise.all(instances.map((a) => a.stop()));
      await receiver.close();
    }
  });

  it("two instances on the store deliver each event exactly once between them", async () => {
    const secret = newSecret();
    const file = await secretFile(secret);
    const receiver = await startWebhookReceiver();
    const instances = await Promise.all(
      ["A", "B"].map((id) =>
        startAgentd({ args: ["--store", shared.uri, ...webhookArgs(receiver.url, file), "--instance-id", id] }),
      ),
    );
    try {
      const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => detachedJob(instances[i % 2]!, `job ${i}`)));
      await until("six deliveries", () => receiver.received.length >= 6, { timeoutMs: 20_000 });
      // Each instance then announces a later job: its outbox polls after the six deliveries found nothing more to send.
      const later = await Promise.all(instances.map((agentd) => detachedJob(agentd, "later job")));
      const laterIds = later.map((id) => `msg_${id}`);
      await until("the later jobs' deliveries", () => laterIds.every((id) => deliveredIds(receiver).includes(id)), {
        timeoutMs: 20_000,
      });
      expect(deliveredIds(receiver).sort()).toEqual([...ids, ...later].map((id) => `msg_${id}`).sort());
    } finally {
      await Promise.all(instances.map((a) => a.stop()));
      await receiver.close();
    }
  });
});
