import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RecordDocument } from "../../stores/mongodb/record-document.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { mongoForTests, type MongoJavaServer } from "../harness/mongo-java-server.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// An abort the worker's status subscription never delivers still stops the work: the next heartbeat
// write finds the row aborted. The abort is written as a whole-document replacement, which
// mongo-java-server's change stream reports as an update without the changed fields (no status), so
// the status pipeline drops it: the stream misses it for real. (A real server delivers replacements,
// hence mongo-java-server only.)
describe.skipIf(Boolean(process.env.MONGODB_URI))("MongoDB: an abort the change stream misses", () => {
  let mongo: MongoJavaServer;
  let stopMongo: () => Promise<void>;
  let agentd: AgentdProcess;
  let raw: MongoClient;

  beforeAll(async () => {
    const started = await mongoForTests();
    mongo = started.server!;
    stopMongo = started.stop;
    const uri = `mongodb://127.0.0.1:${mongo.port}/agentd?directConnection=true&serverSelectionTimeoutMS=2000`;
    // Heartbeats every 200 ms; a TTL far past the test, so no takeover or expiry is involved.
    agentd = await startAgentd({
      args: ["--store", uri, "--heartbeat-interval-ms", "200", "--heartbeat-ttl-ms", "600000"],
    });
    raw = new MongoClient(`mongodb://127.0.0.1:${mongo.port}/?directConnection=true`);
  });

  afterAll(async () => {
    await raw?.close();
    await agentd?.stop("SIGKILL");
    await stopMongo?.();
  });

  it("stops the work at its next heartbeat when the row was aborted behind the stream's back", async () => {
    const client = agentServiceClient(agentd.baseUrl, "grpc");
    // Detached work that runs for minutes unless stopped: 40 words, 5 s each.
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
    const { output } = await client.run({
      init: { agent: "assistant" },
      input: { ...textInput(words, { echoDelayMs: 5_000 }), detach: true },
    });
    const snapshotId = output!.snapshotId;
    const records = raw.db("agentd").collection<RecordDocument>("snapshots");
    // The worker is heartbeating (its row moved past the detach write).
    const first = (await records.findOne({ _id: snapshotId }))!;
    await until(
      "the worker's heartbeats",
      async () => ((await records.findOne({ _id: snapshotId }))?.updateCount ?? 0) >= 2,
    );
    // Abort by replacing the whole document: status, meta.status and a new version, as an abort writes them.
    await until("the abort written", async () => {
      const row = (await records.findOne({ _id: snapshotId }))!;
      const aborted = {
        ...row,
        status: "aborted" as const,
        version: row.version + 1,
        meta: { ...row.meta, status: JSON.stringify("aborted") },
      };
      return (await records.replaceOne({ _id: snapshotId, version: row.version }, aborted)).modifiedCount === 1;
    });
    expect(first.status).toBe("pending");
    const observed = await agentd.logLine(
      (line) => line.msg === "abort observed" && line.snapshotId === snapshotId,
      60_000,
    );
    expect(observed.via).toBe("row-write");
    const finished = await agentd.logLine(
      (line) => line.msg === "background work finished" && line.snapshotId === snapshotId,
      60_000,
    );
    expect(finished.status).toBe("aborted");
    expect((await records.findOne({ _id: snapshotId }))?.status).toBe("aborted");
  }, 120_000);
});
