import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Code,
  ConnectError,
  createAgentClient,
  ERROR_DETAILS_METADATA_KEY,
  errorDetails,
  type AgentClient,
} from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

describe.each(["grpc", "connect"] as const)("errors over %s", (protocol) => {
  let client: AgentClient;
  beforeAll(() => {
    client = createAgentClient(server.baseUrl, { protocol });
  });

  it("an unknown agent rejects the turn and the output with NOT_FOUND", async () => {
    const conversation = client.chat("no-such-agent");
    const turn = conversation.send("hello");
    const err = await turn.end.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    await expect(conversation.output()).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("an unknown agent in run() rejects with NOT_FOUND", async () => {
    await expect(client.run("no-such-agent", "hello")).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("state sent to the server-managed assistant rejects with FAILED_PRECONDITION", async () => {
    const conversation = client.chat("assistant", { state: { messages: [], artifacts: [] } });
    await expect(conversation.send("hello").end).rejects.toMatchObject({ code: Code.FailedPrecondition });
  });

  it("a session ID sent to the client-managed notes agent rejects with FAILED_PRECONDITION", async () => {
    await expect(client.run("notes", "x", { sessionId: "some-session" })).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
  });

  it("an unknown snapshot rejects getSnapshot with NOT_FOUND", async () => {
    await expect(client.getSnapshot("assistant", { snapshotId: "missing" })).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("an in-band failure resolves the turn as failed and puts the error on the output", async () => {
    const conversation = client.chat("flaky");
    const ok = await conversation.send("fine");
    expect(ok.finishReason).toBe("stop");
    const failed = await conversation.send("please fail");
    expect(failed.finishReason).toBe("failed");
    expect(failed.snapshotId).toBeUndefined();
    const output = await conversation.output();
    expect(output.finishReason).toBe("failed");
    expect(output.error).toMatchObject({ status: "INTERNAL", message: "flaky agent failed on purpose" });
  });

  it("an in-band failed turn ends the invocation: turns queued behind it reject with ABORTED", async () => {
    const conversation = client.chat("flaky");
    const failed = conversation.send("fail now");
    const queued = conversation.send("never runs");
    expect((await failed).finishReason).toBe("failed");
    await expect(queued.end).rejects.toMatchObject({ code: Code.Aborted });
    expect((await conversation.output()).error?.status).toBe("INTERNAL");
  });

  it("gRPC over HTTP/1.1 is refused locally with INVALID_ARGUMENT", () => {
    expect(() => createAgentClient(server.baseUrl, { protocol: "grpc", httpVersion: "1.1" })).toThrow(
      expect.objectContaining({ code: Code.InvalidArgument }),
    );
  });
});

describe("errorDetails", () => {
  it("parses the agentd-error-details metadata entry as a JSON object", () => {
    const err = new ConnectError("refused", Code.PermissionDenied, {
      [ERROR_DETAILS_METADATA_KEY]: '{"field":"secret"}',
    });
    expect(errorDetails(err)).toEqual({ field: "secret" });
  });

  it("is undefined without the entry, for non-object JSON, and for other errors", () => {
    expect(errorDetails(new ConnectError("plain", Code.Internal))).toBeUndefined();
    expect(
      errorDetails(new ConnectError("odd", Code.Internal, { [ERROR_DETAILS_METADATA_KEY]: "[1,2]" })),
    ).toBeUndefined();
    expect(errorDetails(new Error("not connect"))).toBeUndefined();
  });
});
