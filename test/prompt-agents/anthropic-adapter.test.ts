// The anthropic/<model> adapter against a local server speaking the Anthropic Messages API
// (test/harness/fake-anthropic-server.ts): the requests @ai-sdk/anthropic sends for our
// messages and tools, and how streamed events, stop reasons and errors map back.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { builtinModelResolver } from "../../src/models/model-resolver.js";
import type { ModelRequest } from "../../src/models/model.js";
import { sessionStateFromWire } from "../../src/protocol/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startFakeAnthropicServer, type FakeAnthropicServer } from "../harness/fake-anthropic-server.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { COMMON_HTTP_STATUS_MAPPING, failureOf, generateWith, HELLO, WEATHER_TOOL } from "../harness/model-calls.js";

let fake: FakeAnthropicServer;
beforeAll(async () => {
  fake = await startFakeAnthropicServer();
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => fake.reset());

function model() {
  return builtinModelResolver({ env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: "sk-ant-test" } })(
    "anthropic/claude-sonnet-4-5",
  );
}

function generate(request: ModelRequest) {
  return generateWith(model(), request);
}

function failure(request: ModelRequest) {
  return failureOf(model(), request);
}

describe("anthropic adapter: the request", () => {
  it("streams from {ANTHROPIC_BASE_URL}/messages with the model id, x-api-key and anthropic-version", async () => {
    await generate(HELLO);
    const [request] = fake.requests;
    expect(request!.path).toBe("/v1/messages");
    expect(request!.body.model).toBe("claude-sonnet-4-5");
    expect(request!.body.stream).toBe(true);
    expect(request!.headers["x-api-key"]).toBe("sk-ant-test");
    expect(request!.headers["anthropic-version"]).toBe("2023-06-01");
  });

  it("sends the system prompt as the top-level system field, not as a message", async () => {
    await generate({
      messages: [
        { role: "system", content: [{ text: "Be brief." }] },
        { role: "user", content: [{ text: "one" }] },
        { role: "model", content: [{ text: "two" }] },
        { role: "user", content: [{ text: "three" }] },
      ],
    });
    const { body } = fake.requests[0]!;
    expect(body.system).toEqual([{ type: "text", text: "Be brief." }]);
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "one" }] },
      { role: "assistant", content: [{ type: "text", text: "two" }] },
      { role: "user", content: [{ type: "text", text: "three" }] },
    ]);
  });

  it("declares tools with their JSON Schema as input_schema", async () => {
    await generate({ ...HELLO, tools: [WEATHER_TOOL] });
    const { tools } = fake.requests[0]!.body;
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      name: "weather",
      description: "Current weather for a city.",
      input_schema: WEATHER_TOOL.inputSchema,
    });
  });

  it("sends tool requests as assistant tool_use blocks and tool responses as user tool_result blocks", async () => {
    await generate({
      messages: [
        { role: "user", content: [{ text: "weather?" }] },
        { role: "model", content: [{ toolRequest: { ref: "toolu_9", name: "weather", input: { city: "Oslo" } } }] },
        {
          role: "tool",
          content: [{ toolResponse: { ref: "toolu_9", name: "weather", output: { forecast: "snow" } } }],
        },
      ],
      tools: [WEATHER_TOOL],
    });
    const [, assistant, toolResult] = fake.requests[0]!.body.messages;
    expect(assistant).toEqual({
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_9", name: "weather", input: { city: "Oslo" } }],
    });
    expect(toolResult).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_9", content: '{"forecast":"snow"}' }],
    });
  });

  it("passes generation config (temperature, max_tokens)", async () => {
    await generate({ ...HELLO, config: { temperature: 0.2, maxOutputTokens: 64 } });
    expect(fake.requests[0]!.body).toMatchObject({ temperature: 0.2, max_tokens: 64 });
  });
});

describe("anthropic adapter: the response", () => {
  it("streams text_delta events as model chunks and returns the whole text", async () => {
    fake.enqueue({ kind: "stream", text: ["Hel", "lo ", "there"] });
    const { response, chunks } = await generate(HELLO);
    expect(chunks.map((c) => c.content[0]?.text)).toEqual(["Hel", "lo ", "there"]);
    expect(response.message).toEqual({ role: "model", content: [{ text: "Hello there" }] });
    expect(response.finishReason).toBe("stop");
  });

  it("assembles input_json_delta pieces into toolRequest parts after the text, in order", async () => {
    fake.enqueue({
      kind: "stream",
      text: ["Checking."],
      toolUses: [
        { id: "toolu_a", name: "weather", input: '{"city":"Paris"}' },
        { id: "toolu_b", name: "weather", input: '{"city":"Rome"}' },
      ],
    });
    const { response } = await generate({ ...HELLO, tools: [WEATHER_TOOL] });
    expect(response.message.content).toEqual([
      { text: "Checking." },
      { toolRequest: { ref: "toolu_a", name: "weather", input: { city: "Paris" } } },
      { toolRequest: { ref: "toolu_b", name: "weather", input: { city: "Rome" } } },
    ]);
  });

  it.each([
    ["end_turn", "stop"],
    ["tool_use", "stop"],
    ["max_tokens", "length"],
    ["refusal", "blocked"],
  ] as const)("maps stop_reason %s to %s", async (wire, ours) => {
    fake.enqueue({ kind: "stream", text: ["cut"], stopReason: wire });
    const { response } = await generate(HELLO);
    expect(response.finishReason).toBe(ours);
  });
});

describe("anthropic adapter: errors", () => {
  it.each([...COMMON_HTTP_STATUS_MAPPING, [529, "UNAVAILABLE"]] as const)(
    "HTTP %i maps to %s with Anthropic's message",
    async (status, expected) => {
      fake.enqueue({ kind: "error", status, message: `anthropic says ${status}` });
      const err = await failure(HELLO);
      expect(err.status).toBe(expected);
      expect(err.message).toContain(`anthropic says ${status}`);
      expect(err.details).toMatchObject({ httpStatus: status });
    },
  );

  it.each([
    ["overloaded_error", "UNAVAILABLE"],
    ["rate_limit_error", "RESOURCE_EXHAUSTED"],
  ] as const)("an %s event in the middle of the stream maps to %s", async (type, expected) => {
    fake.enqueue({ kind: "stream-error", type, message: `mid-stream ${type}` });
    const err = await failure(HELLO);
    expect(err.status).toBe(expected);
    expect(err.message).toContain(`mid-stream ${type}`);
  });
});

describe("anthropic/<model> over the wire", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["test/fixtures/prompt-agents.ts"],
      env: {
        REMOTE_MODEL: "anthropic/claude-sonnet-4-5",
        ANTHROPIC_BASE_URL: fake.baseUrl,
        ANTHROPIC_API_KEY: "sk-ant-wire",
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("runs the tool loop: tool_use, our tool's tool_result sent back, streamed final answer", async () => {
    fake.enqueue(
      { kind: "stream", toolUses: [{ id: "toolu_w", name: "weather", input: '{"city":"Paris"}' }] },
      { kind: "stream", text: ["It is ", "sunny."] },
    );
    const chat = new WireChat(agentServiceClient(server.baseUrl, "grpc"), {
      init: { agent: "remote" },
      input: textInput("Weather in Paris?"),
    });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.STOP);
    expect(chunksText(turn.chunks)).toBe("It is sunny.");
    const { output } = await chat.finish();
    expect(sessionStateFromWire(output.state!).messages.map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
    const [first, second] = fake.requests;
    expect(first!.body.system).toEqual([{ type: "text", text: "Be brief." }]);
    expect(first!.body.tools[0]).toMatchObject({
      name: "weather",
      input_schema: { properties: { city: { type: "string", description: "City name" } }, required: ["city"] },
    });
    expect(second!.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_w", name: "weather", input: { city: "Paris" } }] },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_w", content: '{"city":"Paris","forecast":"sunny"}' }],
      },
    ]);
  });

  it("an Anthropic 401 fails the turn in-band with UNAUTHENTICATED", async () => {
    fake.enqueue({ kind: "error", status: 401, message: "invalid x-api-key" });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "remote" },
      input: textInput("hi"),
    });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("UNAUTHENTICATED");
    expect(output!.error?.message).toContain("invalid x-api-key");
  });
});
