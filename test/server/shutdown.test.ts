import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type ConnectRouter } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { AgentService, RunResponseSchema, RunStreamResponseSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { startTestServer } from "./test-server.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stand-in agent service: Run takes 300 ms; RunStream sends one chunk then waits until cancelled and throws the reason. */
function slowAgentService(router: ConnectRouter): void {
  router.service(AgentService, {
    async run() {
      await sleep(300);
      return create(RunResponseSchema, { output: { sessionId: "done" } });
    },
    async *runStream(_req, ctx) {
      yield create(RunStreamResponseSchema, { chunk: {} });
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      ctx.signal.throwIfAborted();
    },
  });
}

describe("graceful shutdown", () => {
  it("lets an in-flight gRPC call finish before close resolves", async () => {
    const server = await startTestServer({ registerAgentService: slowAgentService });
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const call = client.run({});
    await sleep(50);
    const started = Date.now();
    await server.close({ graceMs: 5000 });
    expect((await call).output?.sessionId).toBe("done");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("lets an in-flight HTTP/1.1 Connect call finish before close resolves", async () => {
    const server = await startTestServer({ registerAgentService: slowAgentService });
    const client = createClient(AgentService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const call = client.run({});
    await sleep(50);
    await server.close({ graceMs: 5000 });
    expect((await call).output?.sessionId).toBe("done");
  });

  it("cancels calls still running when the grace period ends", async () => {
    const server = await startTestServer({ registerAgentService: slowAgentService });
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const received: unknown[] = [];
    const consumed = (async () => {
      for await (const res of client.runStream({})) received.push(res);
    })().catch((e: unknown) => ConnectError.from(e));
    await sleep(100);
    const started = Date.now();
    await server.close({ graceMs: 300 });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
    expect(received).toHaveLength(1);
    const err = await consumed;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
  });

  it("pushes NOT_SERVING to health watchers and ends their streams", async () => {
    const server = await startTestServer();
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    const statuses: Serving[] = [];
    const watching = (async () => {
      for await (const res of client.watch({ service: "agentd.v1.AgentService" })) statuses.push(res.status);
    })();
    await sleep(100);
    await server.close({ graceMs: 5000 });
    await watching;
    expect(statuses).toEqual([Serving.SERVING, Serving.NOT_SERVING]);
  });

  it("refuses new connections after close", async () => {
    const server = await startTestServer();
    await server.close({ graceMs: 1000 });
    await expect(fetch(`${server.url}/grpc.health.v1.Health/Check`, { method: "POST", body: "{}" })).rejects.toThrow();
  });

  it("closes promptly when nothing is in flight", async () => {
    const server = await startTestServer();
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    await client.check({});
    const started = Date.now();
    await server.close({ graceMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
