import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { grpcurl, startTestServer, type TestServer } from "./test-server.js";

describe("one port serves every protocol", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close({ graceMs: 1000 });
  });

  it("answers a gRPC health check from grpcurl over h2c", async () => {
    const out = await grpcurl(server, ["grpc.health.v1.Health/Check"]);
    expect(JSON.parse(out)).toEqual({ status: "SERVING" });
  });

  it("answers a Connect JSON unary call over HTTP/1.1 (plain fetch)", async () => {
    const res = await fetch(`${server.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ service: "agentd.v1.AgentService" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "SERVING" });
  });

  it("answers gRPC-Web over HTTP/1.1", async () => {
    const client = createClient(Health, createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    expect((await client.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("answers Connect over HTTP/2", async () => {
    const client = createClient(Health, createConnectTransport({ baseUrl: server.url, httpVersion: "2" }));
    expect((await client.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("answers gRPC with the generated TS client over HTTP/2", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
    const list = await client.list({});
    expect(Object.keys(list.statuses).sort()).toEqual(["", "agentd.v1.AgentService"]);
  });

  it("streams a server-streaming call over HTTP/1.1 with Connect", async () => {
    const client = createClient(Health, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const abort = new AbortController();
    const first = await client.watch({ service: "" }, { signal: abort.signal })[Symbol.asyncIterator]().next();
    abort.abort();
    expect(first.value?.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("reports NOT_FOUND for a health check of an unknown service", async () => {
    const res = await fetch(`${server.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ service: "no.such.Service" }),
    });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe("not_found");
  });
});
