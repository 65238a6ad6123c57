import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService, ListAgentsResponseSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { annotateCall } from "../../src/server/call-log.js";
import { INTERNAL_ERROR_MESSAGE } from "../../src/server/error-mapping.js";
import { startTestServer, type TestServer } from "./test-server.js";

describe("size limit, error mapping and RPC logs", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      maxMessageBytes: 1024,
      registerAgentService: (router) =>
        router.service(AgentService, {
          run(req, ctx) {
            annotateCall(ctx, { agent: req.init?.agent, sessionId: "sess-9", snapshotId: "snap-9" });
            if (req.init?.agent.startsWith("missing")) throw new AgentError("NOT_FOUND", `agent "${req.init.agent}" is not served`);
            throw new Error("ENOENT: /var/secret/path");
          },
          listAgents() {
            return create(ListAgentsResponseSchema, {});
          },
        }),
    });
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
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = server.logLines().find((l) => l.msg === "rpc rejected before its handler" && l.httpStatus === 429);
    expect(line).toMatchObject({ procedure: "/grpc.health.v1.Health/Check", protocol: "connect", code: "RESOURCE_EXHAUSTED" });
  });

  it("rejects an oversized gRPC request with RESOURCE_EXHAUSTED and keeps serving", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    const err = await client.check({ service: "x".repeat(4096) }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((await client.check({})).status).toBe(1);
  });

  it("maps an AgentError status to the matching code with its message", async () => {
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const err = ConnectError.from(await client.run({ init: { agent: "missing" } }).catch((e: unknown) => e));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe('agent "missing" is not served');
  });

  it("hides unexpected errors behind INTERNAL with a safe message", async () => {
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const err = ConnectError.from(await client.run({ init: { agent: "boom" } }).catch((e: unknown) => e));
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe(INTERNAL_ERROR_MESSAGE);
    expect(err.rawMessage).not.toContain("secret");
  });

  it("answers UNIMPLEMENTED for RPCs the agent service does not implement", async () => {
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const err = ConnectError.from(await client.abort({ snapshotId: "x" }).catch((e: unknown) => e));
    expect(err.code).toBe(Code.Unimplemented);
  });

  it("logs one line per RPC with procedure, protocol, code, duration and attached IDs", async () => {
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    await client.run({ init: { agent: "missing-logged" } }).catch(() => undefined);
    const lines = server.logLines().filter((l) => l.procedure === "/agentd.v1.AgentService/Run" && l.agent === "missing-logged");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: "rpc",
      protocol: "grpc",
      http: "2.0",
      code: "NOT_FOUND",
      agent: "missing-logged",
      sessionId: "sess-9",
      snapshotId: "snap-9",
    });
    expect(typeof lines[0].durationMs).toBe("number");
  });

  it("logs unexpected errors at error level with the original cause", async () => {
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    await client.run({ init: { agent: "boom" } }).catch(() => undefined);
    const line = server.logLines().find((l) => l.agent === "boom");
    expect(line).toMatchObject({ level: 50, code: "INTERNAL", msg: "rpc failed" });
    expect(JSON.stringify(line?.err)).toContain("/var/secret/path");
  });
});
