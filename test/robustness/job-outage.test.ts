import { afterEach, describe, expect, it } from "vitest";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { mongoForTests } from "../harness/mongo-java-server.js";
import { ResettingProxy } from "../harness/resetting-proxy.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// Detached jobs on MongoDB while the connection to MongoDB is cut (every connection reset, new ones
// refused, through a proxy): the store's data survives, only the network is gone.
const JOBS = 8;

interface Ended {
  status: SnapshotStatus;
  error?: { status: string; message: string };
}

/** Polls every job's row until each has its final status; the final row of each. */
async function endedRows(agentd: AgentdProcess, ids: string[], timeoutMs: number): Promise<Ended[]> {
  const client = agentServiceClient(agentd.baseUrl, "grpc");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await Promise.all(
      ids.map((snapshotId) => client.getSnapshot({ agent: "assistant", snapshotId }).catch(() => undefined)),
    );
    // Not pending, and not expired either: a row whose heartbeat went stale during the cut reads expired until its
    // run writes its final status.
    const ended = rows
      .map((r) => r?.snapshot)
      .filter((s) => s && s.status !== SnapshotStatus.PENDING && s.status !== SnapshotStatus.EXPIRED);
    if (ended.length === ids.length)
      return ended.map((s) => ({
        status: s!.status,
        ...(s!.error ? { error: { status: s!.error.status, message: s!.error.message } } : {}),
      }));
    if (Date.now() > deadline) throw new Error(`${ids.length - ended.length} jobs still pending after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Detaches `n` jobs that stream one chunk every `delayMs` for `words` chunks; their pending rows' IDs. */
async function detachJobs(agentd: AgentdProcess, n: number, words: number, delayMs: number): Promise<string[]> {
  const client = agentServiceClient(agentd.baseUrl, "grpc");
  const text = Array.from({ length: words }, (_, i) => `w${i}`).join(" ");
  return Promise.all(
    Array.from({ length: n }, async () => {
      const { output } = await client.run({
        init: { agent: "assistant" },
        input: { ...textInput(text, { echoDelayMs: delayMs }), detach: true },
      });
      return output!.snapshotId;
    }),
  );
}

describe.skipIf(Boolean(process.env.MONGODB_URI))("detached jobs across a MongoDB outage", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const stop of cleanup.splice(0).reverse()) await stop();
  });

  async function start(heartbeatTtlMs: number): Promise<{ agentd: AgentdProcess; proxy: ResettingProxy }> {
    const mongo = await mongoForTests();
    cleanup.push(() => mongo.stop());
    const proxy = new ResettingProxy();
    await proxy.start(mongo.server!.port);
    cleanup.push(() => proxy.close());
    const uri = `mongodb://127.0.0.1:${proxy.port}/agentd?directConnection=true&serverSelectionTimeoutMS=1000`;
    const agentd = await startAgentd({
      args: [
        "--store",
        uri,
        "--heartbeat-interval-ms",
        "500",
        "--heartbeat-ttl-ms",
        String(heartbeatTtlMs),
        "--no-takeover",
      ],
    });
    cleanup.push(() => agentd.stop());
    return { agentd, proxy };
  }

  it("carries every running job across an outage shorter than the heartbeat lease", { timeout: 90_000 }, async () => {
    const { agentd, proxy } = await start(15_000);
    const ids = await detachJobs(agentd, JOBS, 24, 250); // ~6 s of streaming each
    await new Promise((r) => setTimeout(r, 1_500));
    await proxy.cutFor(4_000);
    const rows = await endedRows(agentd, ids, 60_000);
    expect(rows.map((r) => r.error?.message ?? "")).toEqual(ids.map(() => ""));
    expect(rows.map((r) => r.status)).toEqual(ids.map(() => SnapshotStatus.COMPLETED));
  });
});
