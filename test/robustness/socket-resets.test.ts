import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { ResettingProxy } from "../harness/resetting-proxy.js";
import { mongoForTests } from "../harness/mongo-java-server.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { outcomeOf } from "./call-outcome.js";

// Needs its own MongoDB behind a proxy: mongo-java-server (not an external MONGODB_URI).
describe.skipIf(Boolean(process.env.MONGODB_URI))("MongoDB connection resets", () => {
  let stopMongo: () => Promise<void>;
  const proxy = new ResettingProxy();
  let agentd: AgentdProcess;

  beforeAll(async () => {
    const mongo = await mongoForTests();
    stopMongo = mongo.stop;
    await proxy.start(mongo.server!.port);
    // Now and then (under load, about one run in ten here) a reset leaves the driver's end of some
    // connections open without an error, and the commands written to them never hear back: the store
    // gives such a call up at the end of its failover window (30 s), UNAVAILABLE (docs/stores.md, "A
    // connection that goes silent"; test/stores/mongodb-silent-connection.test.ts).
    const uri = `mongodb://127.0.0.1:${proxy.port}/agentd?directConnection=true&serverSelectionTimeoutMS=1000&retryWrites=false&retryReads=false`;
    agentd = await startAgentd({ args: ["--store", uri] });
  });

  afterAll(async () => {
    await agentd?.stop();
    await proxy.close();
    await stopMongo?.();
  });

  // A call cut by a reset is retried by the store within its failover window (issue 37), so it
  // mostly answers ok; one that cannot recover in time is UNAVAILABLE. Never INTERNAL.
  it("answers calls cut by a reset with their result (retried) or UNAVAILABLE, never INTERNAL", async () => {
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("before the resets") });
    const sessionId = output!.sessionId;
    const outcomes: string[] = [];
    let connectionsReset = 0;
    for (let i = 0; i < 15; i++) {
      // A deadline per call: one that hangs shows up by name in the outcomes as deadlineexceeded
      // instead of timing the whole test out. Well past what the store's failover window allows a
      // call stalled on a silent connection: 30 s for its commit, 30 s for the re-read of an unknown outcome.
      const options = { timeoutMs: 120_000 };
      const calls = [
        outcomeOf(client.run({ init: { agent: "assistant" }, input: textInput(`new ${i}`) }, options)),
        outcomeOf(client.getSnapshot({ agent: "assistant", sessionId }, options)),
        outcomeOf(client.listSnapshots({ agent: "assistant", sessionId }, options)),
      ];
      await new Promise((r) => setTimeout(r, i % 4));
      connectionsReset += proxy.reset();
      outcomes.push(...(await Promise.all(calls)));
    }
    const unexpected = outcomes.flatMap((o, i) => (o === "ok" || o === "unavailable" ? [] : [`call ${i}: ${o}`]));
    // On a failure, the server's log lines of the unexpected outcomes' time show where the call waited.
    expect(unexpected, unexpected.length ? agentd.logs().slice(-20_000) : "").toEqual([]);
    expect(outcomes).toHaveLength(45);
    expect(connectionsReset).toBeGreaterThan(15); // the resets cut the store's live connections
  }, 300_000);
});
