import { Code, ConnectError } from "@connectrpc/connect";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { mongoForTests, type MongoJavaServer } from "../harness/mongo-java-server.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { watchDetachedWork } from "./watched-work.js";

// Needs a MongoDB this test can restart empty: mongo-java-server (not an external MONGODB_URI).
describe.skipIf(Boolean(process.env.MONGODB_URI))("WatchSnapshot when MongoDB comes back empty", () => {
  let mongo: MongoJavaServer;
  let stopMongo: () => Promise<void>;
  let agentd: AgentdProcess;

  beforeAll(async () => {
    const started = await mongoForTests();
    mongo = started.server!;
    stopMongo = started.stop;
    const uri = `mongodb://127.0.0.1:${mongo.port}/agentd?directConnection=true&serverSelectionTimeoutMS=500`;
    agentd = await startAgentd({
      args: ["--store", uri, "--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "2000"],
    });
    // Warm up the store (format check, indexes) so the first detached row is fresh when it is watched.
    await agentServiceClient(agentd.baseUrl, "grpc").run({ init: { agent: "assistant" }, input: textInput("warm up") });
  });

  afterAll(async () => {
    await agentd?.stop("SIGKILL");
    await stopMongo?.();
  });

  it("ends NOT_FOUND soon after the record document is deleted", async () => {
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    const db = new MongoClient(`mongodb://127.0.0.1:${mongo.port}/?directConnection=true`);
    const { statuses, error } = await watchDetachedWork(client, 8_000, async (snapshotId) => {
      expect(
        (await db.db("agentd").collection<{ _id: string }>("snapshots").deleteOne({ _id: snapshotId })).deletedCount,
      ).toBe(1);
    }).finally(() => db.close());
    expect(statuses).toEqual([SnapshotStatus.PENDING]);
    // NOT_FOUND from the re-check (every TTL/4 = 500 ms), not DEADLINE_EXCEEDED at the call's 8 s.
    expect(error?.code).toBe(Code.NotFound);
  });

  it("ends (NOT_FOUND once the database answers again) instead of hanging to the deadline", async () => {
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    const { snapshotId, statuses, error } = await watchDetachedWork(client, 15_000, () => mongo.restart());
    expect(statuses).toEqual([SnapshotStatus.PENDING]);
    // During the outage the re-check may fail UNAVAILABLE (retryable); once the empty database answers it is
    // NOT_FOUND; hanging would end DEADLINE_EXCEEDED at the call's 15 s.
    expect([Code.NotFound, Code.Unavailable]).toContain(error?.code);
    // A new watch (what a client retrying UNAVAILABLE does) gets NOT_FOUND once the driver has reconnected.
    let code: Code | undefined;
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      const again = await client
        .watchSnapshot({ agent: "assistant", snapshotId }, { timeoutMs: 5_000 })
        [Symbol.asyncIterator]()
        .next()
        .catch((e) => e);
      code = ConnectError.from(again).code;
      if (code !== Code.Unavailable) break;
    }
    expect(code).toBe(Code.NotFound);
  });
});
