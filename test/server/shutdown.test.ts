import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { create, toJsonString } from "@bufbuild/protobuf";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { AgentService, RunRequestSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { Health, HealthCheckResponse_ServingStatus as Serving } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { serverTestAgents, turnGate } from "../fixtures/server-agents.js";
import { textInput } from "../harness/wire-chat.js";
import { startTestServer } from "./test-server.js";

// The real server and AgentService with the test agents: the `gated` agent's turn runs until the test releases it.

const gatedRun = (text: string) => ({ init: { agent: "gated" }, input: textInput(text) });

/** The text of a Run's answer. */
const answerText = (res: { output?: { message?: { content: { kind: { value?: unknown } }[] } } }) =>
  res.output?.message?.content.map((p) => String(p.kind.value)).join("");

/** A drain grace period longer than the test's timeout: a close that waited for it would fail the test. */
const GRACE_PAST_THE_TEST_MS = 10 * 60_000;

describe("graceful shutdown", () => {
  it("lets an in-flight gRPC call finish before close resolves", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const call = client.run(gatedRun("grpc in flight"));
    await turnGate.started("grpc in flight");
    const closing = server.close({ graceMs: GRACE_PAST_THE_TEST_MS });
    expect(await server.logLine((l) => l.msg === "agentd draining")).toMatchObject({ inFlight: 1 });
    turnGate.release("grpc in flight");
    expect(answerText(await call)).toBe("released: grpc in flight");
    await closing; // once the call was done: waiting for the end of the grace would time the test out
  });

  it("lets an in-flight HTTP/1.1 Connect call finish before close resolves", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    const client = createClient(AgentService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const call = client.run(gatedRun("connect in flight"));
    await turnGate.started("connect in flight");
    const closing = server.close({ graceMs: 10_000 });
    expect(await server.logLine((l) => l.msg === "agentd draining")).toMatchObject({ inFlight: 1 });
    turnGate.release("connect in flight");
    expect(answerText(await call)).toBe("released: connect in flight");
    await closing;
  });

  it("does not wait for pipelined HTTP/1.1 calls whose connection closed before their turn to answer", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    const post = (path: string, body: string) =>
      `POST ${path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const socket = connect(server.port, "127.0.0.1");
    socket.on("error", () => undefined);
    // A Run that holds its turn, and a health check pipelined behind it (its response waits for the Run's).
    const run = toJsonString(RunRequestSchema, create(RunRequestSchema, gatedRun("pipelined then gone")));
    socket.write(post("/agentd.v1.AgentService/Run", run) + post("/grpc.health.v1.Health/Check", "{}"));
    await turnGate.started("pipelined then gone");
    const gone = new Promise((resolve) => socket.once("close", resolve));
    socket.destroy();
    await gone;
    // Neither call can answer any more: close must not wait out the grace (that would time the test out).
    await server.close({ graceMs: GRACE_PAST_THE_TEST_MS });
    turnGate.release("pipelined then gone");
  });

  it("cancels calls still running when the grace period ends, with UNAVAILABLE", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const received: unknown[] = [];
    const consumed = (async () => {
      for await (const res of client.runStream(gatedRun("never released"))) received.push(res);
    })().catch((e: unknown) => ConnectError.from(e));
    await turnGate.started("never released");
    const started = Date.now();
    await server.close({ graceMs: 300 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290); // not before the grace period's end
    expect(received).toHaveLength(1); // the chunk the turn streamed before it was held
    const err = await consumed;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
    expect(server.logLines().find((l) => l.msg === "drain grace expired; cancelling remaining calls")).toMatchObject({
      inFlight: 1,
    });
  });

  it("pushes NOT_SERVING to health watchers and ends their streams", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    const statuses: Serving[] = [];
    let sawServing!: () => void;
    const serving = new Promise<void>((resolve) => (sawServing = resolve));
    const watching = (async () => {
      for await (const res of client.watch({ service: "agentd.v1.AgentService" })) {
        statuses.push(res.status);
        sawServing();
      }
    })();
    await serving; // the watch is open before close
    await server.close({ graceMs: 5000 });
    await watching;
    expect(statuses).toEqual([Serving.SERVING, Serving.NOT_SERVING]);
  });

  it("refuses new connections after close", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    await server.close({ graceMs: 1000 });
    await expect(fetch(`${server.url}/grpc.health.v1.Health/Check`, { method: "POST", body: "{}" })).rejects.toThrow();
  });

  it("closes promptly when nothing is in flight", async () => {
    const server = await startTestServer({ agents: serverTestAgents() });
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    await client.check({});
    await server.close({ graceMs: GRACE_PAST_THE_TEST_MS }); // waiting out the grace would time the test out
  });
});
