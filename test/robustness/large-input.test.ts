import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { performance } from "node:perf_hooks";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";

const MIB = 1024 * 1024;

/** A client whose messages may be as large as the server allows here. */
function largeMessageClient(baseUrl: string): Client<typeof AgentService> {
  return createClient(AgentService, createGrpcTransport({ baseUrl, readMaxBytes: 64 * MIB, writeMaxBytes: 64 * MIB }));
}

/** `mib` MiB of one-letter words: the echo model streams one chunk per word. */
function words(mib: number): string {
  return "a ".repeat((mib * MIB) / 2);
}

/** Latencies (ms) of health checks (Connect JSON over HTTP/1.1), one every 20 ms until `until` settles. */
async function healthLatencies(baseUrl: string, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => {});
  const latencies: number[] = [];
  while (!done) {
    const started = performance.now();
    const res = await fetch(`${baseUrl}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(await res.json()).toEqual({ status: "SERVING" });
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return latencies;
}

describe("a large input streams in linear time and stalls nobody", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({ args: ["--store", "memory:", "--max-message-bytes", String(16 * MIB)] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(
    "a Run echoing 4 MiB of one-letter words (2M chunks) completes while health checks keep being answered",
    { timeout: 120_000 },
    async () => {
      const client = largeMessageClient(server.baseUrl);
      const input = words(4);
      const started = performance.now();
      const run = client.run({ init: { agent: "assistant" }, input: textInput(input) }, { timeoutMs: 90_000 });
      const latencies = await healthLatencies(server.baseUrl, run);
      const runMs = performance.now() - started;
      const { output } = await run;
      expect(output?.finishReason).toBe(FinishReason.STOP);
      const reply = output?.message?.content[0]?.kind;
      expect(reply?.case === "text" && reply.value.length).toBe(`echo: ${input}`.length);
      // Checks ran throughout the Run, none left waiting for it: the slowest took less than half of the
      // Run's own time (both stretch alike on a loaded machine), not about all of it.
      console.log(
        `${latencies.length} health checks during a ${runMs.toFixed(0)} ms Run, the slowest ${Math.max(...latencies).toFixed(0)} ms`,
      );
      expect(latencies.length).toBeGreaterThan(5);
      expect(Math.max(...latencies)).toBeLessThan(runMs / 2);
    },
  );
});

describe("SIGTERM during a large turn", () => {
  it("the server drains for its grace period, cancels the turn and exits", { timeout: 120_000 }, async () => {
    const server = await startAgentd({
      args: ["--store", "memory:", "--max-message-bytes", String(40 * MIB), "--drain-ms", "1000"],
    });
    try {
      const client = largeMessageClient(server.baseUrl);
      // 32 MiB of words: 16M chunks, far longer than the grace period.
      const run = client.run({ init: { agent: "assistant" }, input: textInput(words(32)) }, { timeoutMs: 110_000 });
      run.catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 2_000)); // the turn is streaming
      // 0: drained for the grace period and exited; a drain that waited for the turn to end would be
      // killed by the harness at 30 s (no exit code).
      expect(await server.stop("SIGTERM", 30_000)).toBe(0);
    } finally {
      await server.stop("SIGKILL");
    }
  });
});
