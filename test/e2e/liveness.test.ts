import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { storedSnapshot } from "../harness/stored-records.js";
import { until } from "../harness/until.js";

/** The status of record `snapshotId` in the SQLite store in `dir`, read by a second store instance. */
async function storedStatus(dir: string, snapshotId: string): Promise<string> {
  return (await storedSnapshot(`sqlite:${join(dir, "agentd.db")}`, snapshotId)).record.status;
}

describe("liveness", () => {
  it("reports a pending row whose worker died as expired, without writing it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-expiry-"));
    const doomed = await startAgentd({
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-interval-ms", "100"],
    });
    const { output } = await agentServiceClient(doomed.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("never finishes because the process dies", { echoDelayMs: 1000 }), detach: true },
    });
    await doomed.stop("SIGKILL");

    // --no-takeover: the reader would otherwise take the dead worker's work over (work-takeover.test.ts).
    const reader = await startAgentd({
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-ttl-ms", "300", "--no-takeover"],
    });
    try {
      // The heartbeat going stale is time passing, which no event announces: poll until the row reads expired.
      const client = agentServiceClient(reader.baseUrl, "grpc");
      const read = () => client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
      await until("the dead worker's row to read expired", async () => {
        return (await read()).snapshot?.status === SnapshotStatus.EXPIRED;
      });
      expect(await storedStatus(dir, output!.snapshotId)).toBe("pending");
    } finally {
      await reader.stop();
    }
  });

  it("WatchSnapshot reports expired when the pending row's worker dies mid-watch", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-watch-expiry-"));
    const doomed = await startAgentd({
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-interval-ms", "100"],
    });
    const watcher = await startAgentd({
      args: ["--store", `sqlite:${dir}/agentd.db`, "--heartbeat-ttl-ms", "800", "--no-takeover"],
    });
    try {
      const { output } = await agentServiceClient(doomed.baseUrl, "grpc").run({
        init: { agent: "assistant" },
        input: { ...textInput("a slow reply that will never finish", { echoDelayMs: 1000 }), detach: true },
      });
      const statuses: SnapshotStatus[] = [];
      for await (const res of agentServiceClient(watcher.baseUrl, "grpc").watchSnapshot({
        agent: "assistant",
        snapshotId: output!.snapshotId,
      })) {
        statuses.push(res.status);
        if (res.status === SnapshotStatus.PENDING) {
          await doomed.stop("SIGKILL"); // the worker dies while the watch is open
        }
      }
      // EXPIRED after twice the TTL (the TTL, then the takeover window nobody used) plus the re-check
      // period; a watch that missed the death would hang to the test's timeout.
      expect(statuses).toEqual([SnapshotStatus.PENDING, SnapshotStatus.EXPIRED]);
    } finally {
      await watcher.stop();
      await doomed.stop("SIGKILL").catch(() => undefined);
    }
  });

  it("keeps a pending row alive with heartbeats while the work runs", async () => {
    // A TTL of a minute: the row must read pending when it is read, however slowly a loaded machine
    // gets there; that heartbeats are written is told by the heartbeat itself moving on.
    const server = await startAgentd({
      args: ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "60000", "--drain-ms", "0"],
    });
    try {
      const client = agentServiceClient(server.baseUrl, "grpc");
      const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" "); // 6 s of work at 150 ms a word
      const { output } = await client.run({
        init: { agent: "assistant" },
        input: { ...textInput(words, { echoDelayMs: 150 }), detach: true },
      });
      // Wait for a heartbeat written three intervals after the row was created.
      const snapshot = await until("a heartbeat three intervals after the row's creation", async () => {
        const { snapshot } = await client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
        const { heartbeatAt, createdAt } = snapshot ?? {};
        return heartbeatAt && createdAt && timestampMs(heartbeatAt) - timestampMs(createdAt) > 300 && snapshot;
      });
      expect(snapshot.status).toBe(SnapshotStatus.PENDING);
    } finally {
      await server.stop();
    }
  });

  it("at shutdown leaves unfinished detached work pending (never a false completed) and exits 0", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-drain-"));
    const server = await startAgentd({ args: ["--store", `sqlite:${dir}/agentd.db`, "--drain-ms", "300"] });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("far too slow to finish before the drain deadline", { echoDelayMs: 1000 }), detach: true },
    });
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(await storedStatus(dir, output!.snapshotId)).toBe("pending");
  });

  it("at shutdown lets detached work that fits the drain deadline complete", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-drain-ok-"));
    const server = await startAgentd({ args: ["--store", `sqlite:${dir}/agentd.db`, "--drain-ms", "5000"] });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("quick one", { echoDelayMs: 100 }), detach: true },
    });
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(await storedStatus(dir, output!.snapshotId)).toBe("completed");
  });
});
