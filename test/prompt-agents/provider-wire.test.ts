// Hosted models over the wire: agentd started with OPENAI_BASE_URL pointing at a local
// server that speaks the OpenAI Chat Completions protocol.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { messageFromWire, sessionStateFromWire } from "../../src/protocol/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../harness/fake-openai-server.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

let fake: FakeOpenAiServer;
let server: AgentdProcess;
let client: ReturnType<typeof agentServiceClient>;
beforeAll(async () => {
  fake = await startFakeOpenAiServer();
  server = await startAgentd({
    args: ["test/fixtures/prompt-agents.ts"],
    env: {
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: "sk-wire",
      REMOTE_TIMEOUT_MS: "400",
      AGENTD_ASSISTANT_MODEL: "openai/assistant-model",
    },
  });
  client = agentServiceClient(server.baseUrl, "grpc");
});
afterAll(async () => {
  await server?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

describe("openai/<model> through OPENAI_BASE_URL", () => {
  it("runs the tool loop: tool call, our tool's result sent back, streamed final answer", async () => {
    fake.enqueue(
      { kind: "stream", toolCalls: [{ id: "call_w", name: "weather", arguments: '{"city":"Paris"}' }] },
      { kind: "stream", text: ["It is ", "sunny."] },
    );
    const chat = new WireChat(client, { init: { agent: "remote" }, input: textInput("Weather in Paris?") });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.STOP);
    expect(chunksText(turn.chunks)).toBe("It is sunny.");
    const { output } = await chat.finish();
    expect(sessionStateFromWire(output.state!).messages.map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
    const [first, second] = fake.requests;
    expect(first!.body.messages[0]).toEqual({ role: "system", content: "Be brief." });
    expect(first!.body.tools[0].function).toEqual({
      name: "weather",
      description: "Current weather for a city.",
      parameters: {
        type: "object",
        properties: { city: { type: "string", description: "City name" } },
        required: ["city"],
      },
    });
    expect(first!.body.temperature).toBe(0.1);
    expect(second!.body.messages.slice(1)).toEqual([
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_w", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }],
      },
      { role: "tool", tool_call_id: "call_w", content: '{"city":"Paris","forecast":"sunny"}' },
    ]);
  });

  it.each([
    [400, "INVALID_ARGUMENT"],
    [401, "UNAUTHENTICATED"],
    [403, "PERMISSION_DENIED"],
    [429, "RESOURCE_EXHAUSTED"],
    [500, "UNAVAILABLE"],
    [503, "UNAVAILABLE"],
  ] as const)("HTTP %i from the provider fails the turn in-band with %s", async (status, expected) => {
    fake.enqueue({ kind: "error", status, message: `upstream ${status}` });
    const { output } = await client.run({ init: { agent: "remote" }, input: textInput("hi") });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe(expected);
    expect(output!.error?.message).toContain(`upstream ${status}`);
  });

  it.each([
    [
      "the whole key",
      "Incorrect API key provided: sk-wire. You can find your API key at https://platform.openai.com/account/api-keys.",
    ],
    [
      "a masked key",
      "Incorrect API key provided: sk-proj-************************************************wxyz. You can find your API key at https://platform.openai.com/account/api-keys.",
    ],
  ])(
    "a provider 401 quoting %s reaches the caller without the key material, status and reason intact",
    async (_name, message) => {
      fake.enqueue({ kind: "error", status: 401, message, type: "invalid_request_error", code: "invalid_api_key" });
      const { output } = await client.run({ init: { agent: "remote" }, input: textInput("hi") });
      expect(output!.error?.status).toBe("UNAUTHENTICATED");
      expect(output!.error?.message).toContain("Incorrect API key provided: [redacted].");
      expect(output!.error?.message).not.toMatch(/sk-|\*\*\*\*|wxyz/);
      expect(await server.settledLogs()).not.toContain("sk-wire");
      expect(server.logs()).not.toContain("wxyz");
    },
  );

  it("a provider slower than the configured timeout fails the turn in-band with DEADLINE_EXCEEDED", async () => {
    fake.enqueue({ kind: "hang" });
    const { output } = await client.run({ init: { agent: "remote" }, input: textInput("hi") });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("DEADLINE_EXCEEDED");
  });

  it("AGENTD_ASSISTANT_MODEL switches the assistant example to the hosted model", async () => {
    fake.enqueue({ kind: "stream", text: ["Hello ", "from the model."] });
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("hi") });
    expect(messageFromWire(output!.message!).content[0]?.text).toBe("Hello from the model.");
    expect(fake.requests[0]!.body.model).toBe("assistant-model");
    expect(output!.snapshotId).not.toBe("");
  });
});

describe("missing API keys", () => {
  let keyless: AgentdProcess;
  beforeAll(async () => {
    keyless = await startAgentd({
      args: ["test/fixtures/prompt-agents.ts"],
      env: {
        OPENAI_API_KEY: undefined,
        OPENAI_BASE_URL: undefined,
        ANTHROPIC_API_KEY: undefined,
        AGENTD_ASSISTANT_MODEL: "anthropic/claude-test",
      },
    });
  });
  afterAll(async () => {
    await keyless?.stop();
  });

  it("the server starts, and the first turn fails FAILED_PRECONDITION naming OPENAI_API_KEY", async () => {
    const { output } = await agentServiceClient(keyless.baseUrl, "grpc").run({
      init: { agent: "remote" },
      input: textInput("hi"),
    });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("FAILED_PRECONDITION");
    expect(output!.error?.message).toContain("set the OPENAI_API_KEY environment variable");
  });

  it("an anthropic assistant without ANTHROPIC_API_KEY fails its first turn naming the variable", async () => {
    const { output } = await agentServiceClient(keyless.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: textInput("hi"),
    });
    expect(output!.error?.status).toBe("FAILED_PRECONDITION");
    expect(output!.error?.message).toContain("ANTHROPIC_API_KEY");
  });
});

describe("a blank OPENAI_BASE_URL", () => {
  it("does not stop the server; the first openai turn fails FAILED_PRECONDITION naming the variable", async () => {
    const blank = await startAgentd({
      args: ["test/fixtures/prompt-agents.ts"],
      env: { OPENAI_BASE_URL: "", OPENAI_API_KEY: "sk-x" },
    });
    try {
      const { output } = await agentServiceClient(blank.baseUrl, "grpc").run({
        init: { agent: "remote" },
        input: textInput("hi"),
      });
      expect(output!.error?.status).toBe("FAILED_PRECONDITION");
      expect(output!.error?.message).toContain("check OPENAI_BASE_URL");
    } finally {
      await blank.stop();
    }
  });
});
