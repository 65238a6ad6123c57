import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { storedSnapshot } from "../harness/stored-records.js";

async function storedStatus(dir: string, snapshotId: string): Promise<string> {
  return (await storedSnapshot(dir, snapshotId)).record.status;
}

describe("liveness", () => {
  it("reports a pending row whose worker died as expired, without writing it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-expiry-"));
    const doomed = await startAgentd({ args: ["--store", `file:${dir}`, "--heartbeat-interval-ms", "100"] });
    const { output } = await agentServiceClient(doomed.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("never finishes because the process dies", { echoDelayMs: 1000 }), detach: true },
    });
    await doomed.stop("SIGKILL");

    const reader = await startAgentd({ args: ["--store", `file:${dir}`, "--heartbeat-ttl-ms", "300"] });
    try {
      await new Promise((r) => setTimeout(r, 500));
      const { snapshot } = await agentServiceClient(reader.baseUrl, "grpc").getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
      expect(snapshot?.status).toBe(SnapshotStatus.EXPIRED);
      expect(await storedStatus(dir, output!.snapshotId)).toBe("pending");
    } finally {
      await reader.stop();
    }
  });

  it("WatchSnapshot reports expired when the pending row's worker dies mid-watch", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-watch-expiry-"));
    const doomed = await startAgentd({ args: ["--store", `file:${dir}`, "--heartbeat-interval-ms", "100"] });
    const watcher = await startAgentd({ args: ["--store", `file:${dir}`, "--heartbeat-ttl-ms", "800"] });
    try {
      const { output } = await agentServiceClient(doomed.baseUrl, "grpc").run({
        init: { agent: "assistant" },
        input: { ...textInput("a slow reply that will never finish", { echoDelayMs: 1000 }), detach: true },
      });
      const statuses: SnapshotStatus[] = [];
      let killedAt = 0;
      for await (const res of agentServiceClient(watcher.baseUrl, "grpc").watchSnapshot({ agent: "assistant", snapshotId: output!.snapshotId })) {
        statuses.push(res.status);
        if (res.status === SnapshotStatus.PENDING) {
          await doomed.stop("SIGKILL"); // the worker dies while the watch is open
          killedAt = Date.now();
        }
      }
      expect(statuses).toEqual([SnapshotStatus.PENDING, SnapshotStatus.EXPIRED]);
      expect(Date.now() - killedAt).toBeLessThan(800 + 1500); // the TTL plus the re-check period, with slack
    } finally {
      await watcher.stop();
      await doomed.stop("SIGKILL").catch(() => undefined);
    }
  });

  it("keeps a pending row alive with heartbeats while the work runs", async () => {
    const server = await startAgentd({ args: ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "400"] });
    try {
      const client = agentServiceClient(server.baseUrl, "grpc");
      const { output } = await client.run({ init: { agent: "assistant" }, input: { ...textInput("one two three four five six seven eight", { echoDelayMs: 150 }), detach: true } });
      await new Promise((r) => setTimeout(r, 800));
      const { snapshot } = await client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
      expect(snapshot?.status).toBe(SnapshotStatus.PENDING);
      expect(Number(snapshot?.heartbeatAt?.seconds ?? 0n) * 1000).toBeGreaterThan(Date.now() - 2000);
    } finally {
      await server.stop();
    }
  });

  it("at shutdown leaves unfinished detached work pending (never a false completed) and exits 0", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-drain-"));
    const server = await startAgentd({ args: ["--store", `file:${dir}`, "--drain-ms", "300"] });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("far too slow to finish before the drain deadline", { echoDelayMs: 1000 }), detach: true },
    });
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(await storedStatus(dir, output!.snapshotId)).toBe("pending");
  });

  it("at shutdown lets detached work that fits the drain deadline complete", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-drain-ok-"));
    const server = await startAgentd({ args: ["--store", `file:${dir}`, "--drain-ms", "5000"] });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("quick one", { echoDelayMs: 100 }), detach: true },
    });
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(await storedStatus(dir, output!.snapshotId)).toBe("completed");
  });
});
