import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { mongoForTests, type MongoJavaServer } from "../harness/mongo-java-server.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { outcomeOf } from "./call-outcome.js";

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe().catch(() => undefined);
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Needs a MongoDB this test can stop and restart: mongo-java-server (not an external MONGODB_URI).
describe.skipIf(Boolean(process.env.MONGODB_URI))("MongoDB store outages", () => {
  let mongo: MongoJavaServer;
  let stopMongo: () => Promise<void>;
  let agentd: AgentdProcess;
  /** A server that never reached the store before the outage: its calls need server selection. */
  let cold: AgentdProcess;

  beforeAll(async () => {
    const started = await mongoForTests();
    mongo = started.server!;
    stopMongo = started.stop;
    const uri = `mongodb://127.0.0.1:${mongo.port}/agentd?directConnection=true&serverSelectionTimeoutMS=500`;
    [agentd, cold] = await Promise.all([
      startAgentd({ args: ["--store", uri] }),
      startAgentd({ args: ["--store", uri] }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([agentd?.stop(), cold?.stop()]);
    await stopMongo?.();
  });

  it("answers UNAVAILABLE fast while the store is down, reports NOT_SERVING, and recovers after a restart", async () => {
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    const health = createClient(Health, createGrpcTransport({ baseUrl: agentd.baseUrl }));
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("before the outage") });
    const sessionId = output!.sessionId;
    expect((await health.check({ service: "" })).status).toBe(Serving.SERVING);

    await mongo.stop();
    const coldClient = agentServiceClient(cold.baseUrl, "grpc");
    // Each call fails after two server selections of the URI's serverSelectionTimeoutMS=500 (about
    // 1 s); with the store's 10 s default it would take 20 s and end DEADLINE_EXCEEDED at this deadline.
    const options = { timeoutMs: 8_000 };
    const calls: [string, () => Promise<unknown>][] = [
      ["GetSnapshot (cold server)", () => coldClient.getSnapshot({ agent: "assistant", sessionId }, options)],
      ["Run (cold server)", () => coldClient.run({ init: { agent: "assistant" }, input: textInput("x") }, options)],
      ["Run (new session)", () => client.run({ init: { agent: "assistant" }, input: textInput("x") }, options)],
      ["Run (resume)", () => client.run({ init: { agent: "assistant", sessionId }, input: textInput("x") }, options)],
      ["GetSnapshot", () => client.getSnapshot({ agent: "assistant", sessionId }, options)],
      ["ListSnapshots", () => client.listSnapshots({ agent: "assistant", sessionId }, options)],
    ];
    for (const [name, call] of calls) {
      expect([name, await outcomeOf(call())]).toEqual([name, "unavailable"]);
    }
    // The health probe (every 2 s, 500 ms server selection) notices the outage.
    await until("NOT_SERVING", 30_000, async () =>
      (await health.check({ service: "" })).status === Serving.NOT_SERVING ? true : undefined,
    );
    expect((await health.check({ service: "agentd.v1.AgentService" })).status).toBe(Serving.NOT_SERVING);

    await mongo.restart(); // empty again
    await until("SERVING", 30_000, async () =>
      (await health.check({ service: "" })).status === Serving.SERVING ? true : undefined,
    );
    const again = await until("a Run to succeed", 30_000, () =>
      client.run({ init: { agent: "assistant" }, input: textInput("after the outage") }),
    );
    expect(again.output?.sessionId).toBeTruthy();
    const read = await client.getSnapshot({ agent: "assistant", sessionId: again.output!.sessionId });
    expect(read.snapshot?.snapshotId).toBe(again.output!.snapshotId);
  }, 180_000);
});
