import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { toJsonString } from "@bufbuild/protobuf";
import { FinishReason, SnapshotSchema } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { sessionStateToWire } from "../../src/protocol/index.js";

let server: AgentdProcess;
let client: ReturnType<typeof agentServiceClient>;
let sessionId: string;
let snapshotsBefore: string[];
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
  client = agentServiceClient(server.baseUrl, "grpc");
  const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("keep me") });
  sessionId = output!.sessionId;
  snapshotsBefore = (await client.listSnapshots({ agent: "assistant", sessionId, includeState: true })).snapshots.map(
    (s) => toJsonString(SnapshotSchema, s),
  );
});
afterAll(async () => {
  // None of the bad inputs touched the stored conversation, and the server still serves.
  const after = (await client.listSnapshots({ agent: "assistant", sessionId, includeState: true })).snapshots.map((s) =>
    toJsonString(SnapshotSchema, s),
  );
  expect(after).toEqual(snapshotsBefore);
  expect(
    (await client.run({ init: { agent: "assistant" }, input: textInput("still alive") })).output?.finishReason,
  ).toBe(FinishReason.STOP);
  await server?.stop();
});

async function codeOf(promise: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await promise;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

async function chatCode(
  first: Parameters<typeof client.chat>[0] extends AsyncIterable<infer R> ? R : never,
  rest: (chat: WireChat) => void = () => {},
): Promise<Code | "ok"> {
  const chat = new WireChat(client, first as never);
  rest(chat);
  return codeOf(chat.finish());
}

describe("bad input", () => {
  it("unknown agent is NOT_FOUND", async () => {
    expect(await codeOf(client.run({ init: { agent: "nope" }, input: textInput("x") }))).toBe(Code.NotFound);
    expect(await chatCode({ init: { agent: "nope" } })).toBe(Code.NotFound);
    expect(await codeOf(client.getSnapshot({ agent: "nope", sessionId }))).toBe(Code.NotFound);
  });

  it("a first Chat request without init is INVALID_ARGUMENT", async () => {
    expect(await chatCode({ input: textInput("no init") })).toBe(Code.InvalidArgument);
  });

  it("a second init is INVALID_ARGUMENT", async () => {
    expect(await chatCode({ init: { agent: "assistant" } }, (c) => c.send({ init: { agent: "assistant" } }))).toBe(
      Code.InvalidArgument,
    );
  });

  it("an empty input is INVALID_ARGUMENT", async () => {
    expect(await codeOf(client.run({ init: { agent: "assistant" }, input: {} }))).toBe(Code.InvalidArgument);
    expect(await codeOf(client.run({ init: { agent: "assistant" } }))).toBe(Code.InvalidArgument);
    expect(await chatCode({ init: { agent: "assistant" } }, (c) => c.send({ input: {} }))).toBe(Code.InvalidArgument);
  });

  it("state together with IDs is INVALID_ARGUMENT", async () => {
    const state = sessionStateToWire({ messages: [], artifacts: [] });
    expect(await codeOf(client.run({ init: { agent: "notes", state, sessionId: "s" }, input: textInput("x") }))).toBe(
      Code.InvalidArgument,
    );
  });

  it("a resume mode that does not match the agent is FAILED_PRECONDITION", async () => {
    const state = sessionStateToWire({ messages: [], artifacts: [] });
    expect(await codeOf(client.run({ init: { agent: "assistant", state }, input: textInput("x") }))).toBe(
      Code.FailedPrecondition,
    );
    expect(await codeOf(client.run({ init: { agent: "notes", sessionId }, input: textInput("x") }))).toBe(
      Code.FailedPrecondition,
    );
  });

  it("unknown session or snapshot is NOT_FOUND", async () => {
    expect(
      await codeOf(client.run({ init: { agent: "assistant", sessionId: "missing" }, input: textInput("x") })),
    ).toBe(Code.NotFound);
    expect(
      await codeOf(client.run({ init: { agent: "assistant", snapshotId: "missing" }, input: textInput("x") })),
    ).toBe(Code.NotFound);
    expect(await codeOf(client.getSnapshot({ agent: "assistant", snapshotId: "missing" }))).toBe(Code.NotFound);
  });

  it("resuming a snapshot that is not completed is FAILED_PRECONDITION", async () => {
    const detached = await client.run({
      init: { agent: "assistant" },
      input: { ...textInput("slow", { echoDelayMs: 200 }), detach: true },
    });
    expect(detached.output?.finishReason).toBe(FinishReason.DETACHED);
    const pending = detached.output!.snapshotId;
    expect(await codeOf(client.run({ init: { agent: "assistant", snapshotId: pending }, input: textInput("x") }))).toBe(
      Code.FailedPrecondition,
    );
  });

  it("custom state that fails the schema is INVALID_ARGUMENT naming the field", async () => {
    const state = sessionStateToWire({ messages: [], artifacts: [], custom: { notes: "not-a-list" } });
    const err = ConnectError.from(
      await client.run({ init: { agent: "notes", state }, input: textInput("x") }).catch((e) => e),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain("notes");
  });

  it("a request over the size limit is RESOURCE_EXHAUSTED", async () => {
    const huge = "x".repeat(5 * 1024 * 1024);
    expect(await codeOf(client.run({ init: { agent: "assistant" }, input: textInput(huge) }))).toBe(
      Code.ResourceExhausted,
    );
    const h1 = agentServiceClient(server.baseUrl, "connect-h1");
    expect(await codeOf(h1.run({ init: { agent: "assistant" }, input: textInput(huge) }))).toBe(Code.ResourceExhausted);
  });
});
