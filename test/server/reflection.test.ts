import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v1 from "../../gen/ts/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/ts/grpc/reflection/v1alpha/reflection_pb.js";
import { serverTestAgents } from "../fixtures/server-agents.js";
import { grpcurl, startTestServer, type TestServer } from "./test-server.js";

/** An async iterable yielding one value (bidi client calls take iterables). */
async function* once<T>(value: T): AsyncGenerator<T> {
  yield value;
}

/** Sends one reflection request on a fresh stream and returns the single response. */
async function reflect(server: TestServer, request: { case: string; value: unknown }, alpha = false) {
  const transport = createGrpcTransport({ baseUrl: server.url });
  if (alpha) {
    const client = createClient(v1alpha.ServerReflection, transport);
    const req = create(v1alpha.ServerReflectionRequestSchema, { messageRequest: request as never });
    for await (const res of client.serverReflectionInfo(once(req))) return res.messageResponse;
  } else {
    const client = createClient(v1.ServerReflection, transport);
    const req = create(v1.ServerReflectionRequestSchema, { messageRequest: request as never });
    for await (const res of client.serverReflectionInfo(once(req))) return res.messageResponse;
  }
  throw new Error("no reflection response");
}

describe("server reflection", () => {
  let server: TestServer;
  beforeAll(async () => {
    // The real AgentService on the test agents (`echo` answers "echo: <text>").
    server = await startTestServer({ agents: serverTestAgents() });
  });
  afterAll(async () => {
    await server.close({ graceMs: 1000 });
  });

  it("lists the agent, health and both reflection services to grpcurl", async () => {
    const out = await grpcurl(server, ["list"]);
    expect(out.trim().split("\n")).toEqual([
      "agentd.v1.AgentService",
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]);
  });

  it("shows the proto's comments to grpcurl describe (descriptors with source info)", async () => {
    const out = await grpcurl(server, ["describe", "agentd.v1.AgentInput"]);
    expect(out).toContain("AgentInput is one input of a conversation.");
    expect(out).toMatch(/\/\/ The user's message for this turn\.\s*\n\s*\.agentd\.v1\.Message message = 1;/);
    expect(out).toContain("Resume parts for an interrupted turn.");
    const service = await grpcurl(server, ["describe", "agentd.v1.AgentService.Chat"]);
    expect(service).toMatch(/\/\/ \S/);
  });

  it("describes every AgentService RPC to grpcurl", async () => {
    const out = await grpcurl(server, ["describe", "agentd.v1.AgentService"]);
    for (const rpc of [
      "Chat",
      "Run",
      "RunStream",
      "GetSnapshot",
      "ListSnapshots",
      "WatchSnapshot",
      "Abort",
      "AttachInvocation",
      "ListAgents",
      "ListSessions",
      "GetSession",
      "UpdateSession",
      "DeleteSession",
    ]) {
      expect(out).toContain(`rpc ${rpc} (`);
    }
    expect(out).toContain("rpc Chat ( stream .agentd.v1.ChatRequest ) returns ( stream .agentd.v1.ChatResponse )");
  });

  it("describes a message whose fields come from other files", async () => {
    const out = await grpcurl(server, ["describe", "agentd.v1.ChatRequest"]);
    expect(out).toContain(".agentd.v1.AgentInit init = 1;");
    expect(out).toContain(".agentd.v1.AgentInput input = 2;");
  });

  it("lets grpcurl encode a JSON request and call Run with no proto files", async () => {
    const out = await grpcurl(
      server,
      ["agentd.v1.AgentService/Run"],
      JSON.stringify({ init: { agent: "echo" }, input: { message: { role: "ROLE_USER", content: [{ text: "hi" }] } } }),
    );
    const body = JSON.parse(out);
    expect(body.output.message.content[0].text).toBe("echo: hi");
    expect(body.output.finishReason).toBe("FINISH_REASON_STOP");
  });

  it("returns a file with its transitive dependencies for a symbol (v1)", async () => {
    const res = await reflect(server, { case: "fileContainingSymbol", value: "agentd.v1.AgentService.Chat" });
    expect(res.case).toBe("fileDescriptorResponse");
    const names = (res.value as v1.FileDescriptorResponse).fileDescriptorProto.map(
      (b) => fromBinary(FileDescriptorProtoSchema, b).name,
    );
    expect(names[0]).toBe("agentd/v1/agent_service.proto");
    expect(new Set(names)).toEqual(
      new Set([
        "agentd/v1/agent_service.proto",
        "agentd/v1/agent.proto",
        "agentd/v1/content.proto",
        "agentd/v1/state.proto",
        "google/protobuf/duration.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/timestamp.proto",
      ]),
    );
  });

  it("resolves a nested enum symbol over v1alpha", async () => {
    const res = await reflect(
      server,
      { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.ServingStatus" },
      true,
    );
    expect(res.case).toBe("fileDescriptorResponse");
    const first = fromBinary(
      FileDescriptorProtoSchema,
      (res.value as v1alpha.FileDescriptorResponse).fileDescriptorProto[0],
    );
    expect(first.name).toBe("grpc/health/v1/health.proto");
  });

  it("returns a file by name", async () => {
    const res = await reflect(server, { case: "fileByFilename", value: "google/protobuf/struct.proto" });
    const first = fromBinary(
      FileDescriptorProtoSchema,
      (res.value as v1.FileDescriptorResponse).fileDescriptorProto[0],
    );
    expect(first.messageType.map((m) => m.name)).toContain("Value");
  });

  it("answers an unknown symbol with a NOT_FOUND error_response", async () => {
    const res = await reflect(server, { case: "fileContainingSymbol", value: "agentd.v1.Nope" });
    expect(res.case).toBe("errorResponse");
    expect((res.value as v1.ErrorResponse).errorCode).toBe(5);
  });

  it("answers extension numbers of a known message with an empty list", async () => {
    const res = await reflect(server, { case: "allExtensionNumbersOfType", value: "agentd.v1.Part" });
    expect(res.case).toBe("allExtensionNumbersResponse");
    expect((res.value as v1.ExtensionNumberResponse).extensionNumber).toEqual([]);
  });

  it("answers an unknown extension with a NOT_FOUND error_response", async () => {
    const res = await reflect(server, {
      case: "fileContainingExtension",
      value: { containingType: "agentd.v1.Part", extensionNumber: 1000 },
    });
    expect(res.case).toBe("errorResponse");
    expect((res.value as v1.ErrorResponse).errorCode).toBe(5);
  });
});
