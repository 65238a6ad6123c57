import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server, type Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";

// SIGTERM is honoured whatever is running: in-flight work gets --drain-ms,
// closing the store and flushing telemetry a few seconds more (the forced-exit
// margin), then the process exits anyway.
const DRAIN_MS = 500;
/** The margin after the drain period before agentd exits regardless (src/cli/main.ts). */
const FORCED_EXIT_MARGIN_MS = 5_000;

describe("SIGTERM while something never ends", () => {
  let server: AgentdProcess | undefined;
  afterEach(async () => {
    await server?.stop("SIGKILL");
    server = undefined;
  });

  it(
    "a foreground turn that never ends (ignores cancellation): exits after the drain period",
    { timeout: 60_000 },
    async () => {
      server = await startAgentd({
        args: ["test/fixtures/misbehaving-agents.ts", "--store", "memory:", "--drain-ms", String(DRAIN_MS)],
      });
      const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
      const stream = client.runStream({ init: { agent: "stuck" }, input: textInput("hello") }, { timeoutMs: 50_000 });
      const first = await stream[Symbol.asyncIterator]().next(); // the turn is running
      expect(first.done).toBe(false);
      const code = await server.stop("SIGTERM", 40_000);
      // 0: drained (the stuck turn abandoned); the forced exit after the margin exits 1 (below), the
      // harness's SIGKILL at 40 s leaves no code.
      expect(code).toBe(0);
    },
  );

  it(
    "detached work that never ends (ignores cancellation): exits after the drain period",
    { timeout: 60_000 },
    async () => {
      server = await startAgentd({
        args: ["test/fixtures/misbehaving-agents.ts", "--store", "memory:", "--drain-ms", String(DRAIN_MS)],
      });
      const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
      const { output } = await client.run(
        { init: { agent: "stuck" }, input: { ...textInput("hello"), detach: true } },
        { timeoutMs: 50_000 },
      );
      expect(output?.snapshotId).toBeTruthy(); // the work runs in the background now
      const code = await server.stop("SIGTERM", 40_000);
      expect(code).toBe(0); // drained, not the forced exit (1) nor the harness's SIGKILL
    },
  );

  describe("a trace collector that accepts connections and never answers", () => {
    let collector: Server;
    const held: Socket[] = [];
    beforeAll(async () => {
      collector = createServer((socket) => held.push(socket)); // reads nothing, answers nothing
      await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    });
    afterAll(async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => collector.close(resolve));
    });

    it(
      "flushing telemetry hangs shutdown: the process exits 1 after the drain period and the margin",
      { timeout: 90_000 },
      async () => {
        const address = collector.address();
        const port = typeof address === "object" && address ? address.port : 0;
        server = await startAgentd({
          args: ["--store", "memory:", "--drain-ms", String(DRAIN_MS)],
          env: {
            OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
            // The exporters would wait a minute for the collector.
            OTEL_EXPORTER_OTLP_TIMEOUT: "60000",
            OTEL_BSP_EXPORT_TIMEOUT: "60000",
            OTEL_METRIC_EXPORT_TIMEOUT: "60000",
          },
        });
        const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
        await client.run({ init: { agent: "assistant" }, input: textInput("spans to flush") }); // spans to export
        const signalled = performance.now();
        const code = await server.stop("SIGTERM", 60_000);
        const exitMs = performance.now() - signalled;
        expect(code).toBe(1);
        // Not before the margin; exit code 1 and the log line tell the forced exit from the harness's
        // SIGKILL at 60 s (the exporters would wait that long).
        expect(exitMs).toBeGreaterThanOrEqual(DRAIN_MS + FORCED_EXIT_MARGIN_MS - 100);
        expect(server.logs()).toMatch(/shutdown did not finish/);
      },
    );
  });
});
