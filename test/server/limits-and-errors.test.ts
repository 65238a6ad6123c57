import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AgentService,
  ChatRequestSchema,
  ListAgentsRequestSchema,
  type ChatRequest,
} from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { AsyncChannel } from "../../src/streams/async-channel.js";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { INTERNAL_ERROR_MESSAGE } from "../../src/server/error-mapping.js";
import { BROKEN_STORE_ERROR, serverTestAgents } from "../fixtures/server-agents.js";
import { textInput } from "../harness/wire-chat.js";
import { startTestServer, type TestServer } from "./test-server.js";

describe("size limit, error mapping and RPC logs", () => {
  let server: TestServer;
  let client: ReturnType<typeof createClient<typeof AgentService>>;
  beforeAll(async () => {
    // The real AgentService on the test agents; `broken-store`'s store fails with a plain Error naming a private path.
    server = await startTestServer({ agents: serverTestAgents(), maxMessageBytes: 1024 });
    client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
  });
  afterAll(async () => {
    await server.close({ graceMs: 1000 });
  });

  it("rejects an oversized Connect request with resource_exhausted", async () => {
    const res = await fetch(`${server.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ service: "x".repeat(4096) }),
    });
    expect((await res.json()).code).toBe("resource_exhausted");
  });

  it("logs an oversized request that never reached a handler", async () => {
    await fetch(`${server.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ service: "y".repeat(2048) }),
    });
    const line = await server.logLine((l) => l.msg === "rpc rejected before its handler" && l.httpStatus === 429);
    expect(line).toMatchObject({
      procedure: "/grpc.health.v1.Health/Check",
      protocol: "connect",
      code: "RESOURCE_EXHAUSTED",
    });
  });

  it("rejects an oversized gRPC request with RESOURCE_EXHAUSTED and keeps serving", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    const err = await health.check({ service: "x".repeat(4096) }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((await health.check({})).status).toBe(1);
  });

  it("maps an AgentError status to the matching code with its message", async () => {
    const err = ConnectError.from(
      await client.run({ init: { agent: "missing" }, input: textInput("hi") }).catch((e: unknown) => e),
    );
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe('unknown agent "missing"; available: echo, gated, broken-store');
  });

  it("hides unexpected errors behind INTERNAL with a safe message", async () => {
    const err = ConnectError.from(
      await client
        .run({ init: { agent: "broken-store", sessionId: "any-session" }, input: textInput("hi") })
        .catch((e: unknown) => e),
    );
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe(INTERNAL_ERROR_MESSAGE);
    expect(err.rawMessage).not.toContain("secret");
  });

  it("answers UNIMPLEMENTED for a method the agent service does not have", async () => {
    const transport = createGrpcTransport({ baseUrl: server.url });
    // ListAgents' descriptor under another name: /agentd.v1.AgentService/NoSuchMethod.
    const unknownMethod = { ...AgentService.method.listAgents, name: "NoSuchMethod" };
    const call = transport.unary(unknownMethod, undefined, undefined, undefined, create(ListAgentsRequestSchema));
    const err = ConnectError.from(await call.catch((e: unknown) => e));
    expect(err.code).toBe(Code.Unimplemented);
  });

  it("logs one line per RPC with procedure, protocol, code, duration and the call's IDs", async () => {
    const { output } = await client.run({ init: { agent: "echo" }, input: textInput("logged") });
    const isThisCall = (l: Record<string, unknown>) =>
      l.procedure === "/agentd.v1.AgentService/Run" && l.sessionId === output!.sessionId;
    await server.logLine(isThisCall);
    const lines = server.logLines().filter(isThisCall);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: "rpc",
      protocol: "grpc",
      http: "2.0",
      code: "OK",
      agent: "echo",
      sessionId: output!.sessionId,
      snapshotId: output!.snapshotId,
    });
    expect(typeof lines[0].durationMs).toBe("number");
  });

  it("logs a Chat the client cancels after a turn with that turn's snapshot", async () => {
    const requests = new AsyncChannel<ChatRequest>();
    requests.push(create(ChatRequestSchema, { init: { agent: "echo" }, input: textInput("first") }));
    const abort = new AbortController();
    const responses = client.chat(requests, { signal: abort.signal })[Symbol.asyncIterator]();
    let turnEnd: { snapshotId: string; sessionId: string } | undefined;
    while (!turnEnd) {
      const next = await responses.next();
      if (next.done) throw new Error("the Chat stream ended before its first TurnEnd");
      if (next.value.chunk?.turnEnd) turnEnd = next.value.chunk.turnEnd;
    }
    abort.abort();
    await responses.next().catch(() => undefined);
    const line = await server.logLine(
      (l) => l.procedure === "/agentd.v1.AgentService/Chat" && l.sessionId === turnEnd.sessionId,
    );
    expect(line).toMatchObject({ msg: "rpc", agent: "echo", snapshotId: turnEnd.snapshotId });
  });

  it("logs the IDs a failed RPC asked for on its line", async () => {
    await client
      .run({ init: { agent: "echo", sessionId: "no-such-session" }, input: textInput("x") })
      .catch(() => undefined);
    const line = await server.logLine(
      (l) => l.procedure === "/agentd.v1.AgentService/Run" && l.sessionId === "no-such-session",
    );
    expect(line).toMatchObject({ msg: "rpc", code: "NOT_FOUND", agent: "echo", sessionId: "no-such-session" });
  });

  it("logs unexpected errors at error level with the original cause", async () => {
    await client
      .run({ init: { agent: "broken-store", sessionId: "logged-session" }, input: textInput("hi") })
      .catch(() => undefined);
    const line = await server.logLine((l) => l.agent === "broken-store" && l.sessionId === "logged-session");
    expect(line).toMatchObject({ level: 50, code: "INTERNAL", msg: "rpc failed" });
    expect((line.err as { message?: string }).message).toBe(BROKEN_STORE_ERROR);
  });
});
