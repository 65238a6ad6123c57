import type { Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { MongoJavaServer } from "../harness/mongo-java-server.js";
import { MongoWireTap } from "../harness/mongo-wire-tap.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// Issue 37's bound, over real processes: one agentd on mongo-java-server (a replica set), its
// MongoDB traffic counted by a wire tap (a TCP proxy reading the OP_MSG commands), with 200
// followers (150 AttachInvocation, 50 WatchSnapshot streams) of 10 detached jobs.

const JOBS = 10;
const ATTACHERS = 150;
const WATCHERS = 50;

describe("mongodb coordination of one instance with 200 followers of 10 jobs", () => {
  let mongo: MongoJavaServer;
  let tap: MongoWireTap;
  let agentd: AgentdProcess;
  const commands: Document[] = [];
  beforeAll(async () => {
    mongo = await MongoJavaServer.start(0, { replicaSet: "rs0" });
    tap = await MongoWireTap.start(mongo.port);
    tap.listener = (command) => commands.push(command);
    agentd = await startAgentd({
      args: [
        "--store",
        `mongodb://127.0.0.1:${tap.port}/agentd_bound?directConnection=true`,
        "--heartbeat-interval-ms",
        "500",
      ],
    });
  }, 300_000);
  afterAll(async () => {
    await agentd?.stop("SIGKILL"); // its detached jobs still run: a graceful stop would wait out the drain (10 s)
    await tap?.close();
    await mongo?.stop();
  });

  it(
    "opens at most 6 change streams and 20 connections, and its heartbeats rewrite no chunk",
    { timeout: 180_000 },
    async () => {
      const client = agentServiceClient(agentd.baseUrl, "grpc");
      // One HTTP/2 connection per 50 followers: a server allows 100 concurrent streams per connection.
      const followerClients = Array.from({ length: 4 }, () => agentServiceClient(agentd.baseUrl, "grpc"));
      const clientOf = (i: number): typeof client => followerClients[i % followerClients.length]!;
      const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
      const jobs: string[] = [];
      for (let i = 0; i < JOBS; i++) {
        const { output } = await client.run({
          init: { agent: "assistant" },
          input: { ...textInput(words, { echoDelayMs: 100 }), detach: true },
        });
        jobs.push(output!.snapshotId);
      }
      const controller = new AbortController();
      let attached = 0;
      let watching = 0;
      const follow = async (stream: AsyncIterable<unknown>, counted: () => void): Promise<void> => {
        let first = true;
        try {
          for await (const _ of stream) {
            if (first) counted();
            first = false;
          }
        } catch {
          // aborted at the end of the test
        }
      };
      const followers = [
        ...Array.from({ length: ATTACHERS }, (_, i) =>
          follow(
            clientOf(i).attachInvocation(
              { agent: "assistant", snapshotId: jobs[i % JOBS]! },
              { signal: controller.signal },
            ),
            () => attached++,
          ),
        ),
        ...Array.from({ length: WATCHERS }, (_, i) =>
          follow(
            clientOf(i).watchSnapshot(
              { agent: "assistant", snapshotId: jobs[i % JOBS]! },
              { signal: controller.signal },
            ),
            () => watching++,
          ),
        ),
      ];
      try {
        await until("every follower has its first answer", () => attached === ATTACHERS && watching === WATCHERS, {
          timeoutMs: 90_000,
        });
        await new Promise((resolve) => setTimeout(resolve, 3_000)); // several heartbeats of every job
        const counts = tap.snapshot;
        expect(counts.changeStreams).toBeLessThanOrEqual(6);
        expect(counts.peakConnections).toBeLessThanOrEqual(20);
        const chunkUpdates = commands
          .filter((c) => c.update === "stream_chunks")
          .flatMap((c) => c.updates as { q: { sequence?: unknown }; multi?: boolean }[]);
        expect(chunkUpdates.length).toBeGreaterThan(0); // the heartbeats' keeps
        expect(chunkUpdates.filter((u) => u.multi === true || u.q.sequence !== 0)).toEqual([]);
      } finally {
        controller.abort();
        await Promise.all(followers);
      }
    },
  );
});
