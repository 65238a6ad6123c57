// The openai/<model> adapter against a local server speaking the Chat Completions protocol.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { builtinModelResolver } from "../../src/models/model-resolver.js";
import type { ModelRequest } from "../../src/models/model.js";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../harness/fake-openai-server.js";
import { COMMON_HTTP_STATUS_MAPPING, failureOf, generateWith, HELLO, WEATHER_TOOL } from "../harness/model-calls.js";
import { until } from "../harness/until.js";

let fake: FakeOpenAiServer;
beforeAll(async () => {
  fake = await startFakeOpenAiServer();
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => fake.reset());

function model(env: NodeJS.ProcessEnv = { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test" }) {
  return builtinModelResolver({ env })("openai/test-model");
}

function generate(request: ModelRequest, signal?: AbortSignal) {
  return generateWith(model(), request, signal);
}

function failure(request: ModelRequest, m = model()) {
  return failureOf(m, request);
}

describe("openai adapter: the request", () => {
  it("streams from /v1/chat/completions with the model id and the API key", async () => {
    await generate(HELLO);
    const [request] = fake.requests;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.body.model).toBe("test-model");
    expect(request!.body.stream).toBe(true);
    expect(request!.headers.authorization).toBe("Bearer sk-test");
  });

  it("puts the system prompt first, then the history in order", async () => {
    await generate({
      messages: [
        { role: "system", content: [{ text: "Be brief." }] },
        { role: "user", content: [{ text: "one" }] },
        { role: "model", content: [{ text: "two" }] },
        { role: "user", content: [{ text: "three" }] },
      ],
    });
    expect(fake.requests[0]!.body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "one" },
      { role: "assistant", content: "two" },
      { role: "user", content: "three" },
    ]);
  });

  it("declares tools with their JSON Schema as functions", async () => {
    await generate({ ...HELLO, tools: [WEATHER_TOOL] });
    expect(fake.requests[0]!.body.tools).toEqual([
      {
        type: "function",
        function: { name: "weather", description: "Current weather for a city.", parameters: WEATHER_TOOL.inputSchema },
      },
    ]);
  });

  it("sends tool requests as assistant tool_calls and tool responses as tool messages", async () => {
    await generate({
      messages: [
        { role: "user", content: [{ text: "weather?" }] },
        { role: "model", content: [{ toolRequest: { ref: "call_9", name: "weather", input: { city: "Oslo" } } }] },
        { role: "tool", content: [{ toolResponse: { ref: "call_9", name: "weather", output: { forecast: "snow" } } }] },
      ],
      tools: [WEATHER_TOOL],
    });
    const [, assistant, tool] = fake.requests[0]!.body.messages;
    expect(assistant).toMatchObject({
      role: "assistant",
      tool_calls: [{ id: "call_9", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }],
    });
    expect(tool).toEqual({ role: "tool", tool_call_id: "call_9", content: '{"forecast":"snow"}' });
  });

  it("passes generation config (temperature, max tokens)", async () => {
    await generate({ ...HELLO, config: { temperature: 0.2, maxOutputTokens: 64 } });
    expect(fake.requests[0]!.body).toMatchObject({ temperature: 0.2, max_tokens: 64 });
  });
});

describe("openai adapter: the response", () => {
  it("streams text deltas as model chunks and returns the whole text", async () => {
    fake.enqueue({ kind: "stream", text: ["Hel", "lo ", "there"] });
    const { response, chunks } = await generate(HELLO);
    expect(chunks.map((c) => c.content[0]?.text)).toEqual(["Hel", "lo ", "there"]);
    expect(response.message).toEqual({ role: "model", content: [{ text: "Hello there" }] });
    expect(response.finishReason).toBe("stop");
  });

  it("assembles streamed tool call deltas into toolRequest parts, in order", async () => {
    fake.enqueue({
      kind: "stream",
      toolCalls: [
        { id: "call_a", name: "weather", arguments: '{"city":"Paris"}' },
        { id: "call_b", name: "weather", arguments: '{"city":"Rome"}' },
      ],
    });
    const { response, chunks } = await generate({ ...HELLO, tools: [WEATHER_TOOL] });
    expect(response.message.content).toEqual([
      { toolRequest: { ref: "call_a", name: "weather", input: { city: "Paris" } } },
      { toolRequest: { ref: "call_b", name: "weather", input: { city: "Rome" } } },
    ]);
    expect(response.finishReason).toBe("stop");
    expect(chunks.flatMap((c) => c.content.map((p) => p.toolRequest?.ref))).toEqual(["call_a", "call_b"]);
  });

  it.each([
    ["length", "length"],
    ["content_filter", "blocked"],
  ] as const)("maps finish_reason %s to %s", async (wire, ours) => {
    fake.enqueue({ kind: "stream", text: ["cut"], finishReason: wire });
    const { response } = await generate(HELLO);
    expect(response.finishReason).toBe(ours);
  });
});

describe("openai adapter: errors", () => {
  it.each([...COMMON_HTTP_STATUS_MAPPING, [503, "UNAVAILABLE"]] as const)(
    "HTTP %i maps to its status with the provider's message",
    async (status, expected) => {
      fake.enqueue({ kind: "error", status, message: `provider says ${status}` });
      const err = await failure(HELLO);
      expect(err.status).toBe(expected);
      expect(err.message).toContain(`provider says ${status}`);
      expect(err.details).toMatchObject({ httpStatus: status });
    },
  );

  it("a call slower than config.timeoutMs fails with DEADLINE_EXCEEDED", async () => {
    fake.enqueue({ kind: "hang" });
    const err = await failure({ ...HELLO, config: { timeoutMs: 300 } });
    expect(err.status).toBe("DEADLINE_EXCEEDED");
    expect(err.message).toContain("300 ms");
  });

  it("a cancelled call fails with CANCELLED", async () => {
    fake.enqueue({ kind: "hang" });
    const controller = new AbortController();
    const before = fake.requests.length;
    const call = model()
      .generate(HELLO, { signal: controller.signal })
      .catch((e: unknown) => e);
    await until("the request to reach the provider", () => fake.requests.length > before); // in flight, held open
    controller.abort();
    const err = await call;
    expect((err as AgentError).status).toBe("CANCELLED");
  });

  it("a missing API key fails with FAILED_PRECONDITION naming OPENAI_API_KEY, without a request", async () => {
    const err = await failure(HELLO, model({}));
    expect(err.status).toBe("FAILED_PRECONDITION");
    expect(err.message).toContain("OPENAI_API_KEY");
    expect(fake.requests).toHaveLength(0);
  });

  it("an unreachable server fails with UNAVAILABLE", async () => {
    const err = await failure(HELLO, model({ OPENAI_BASE_URL: "http://127.0.0.1:1/v1", OPENAI_API_KEY: "k" }));
    expect(err.status).toBe("UNAVAILABLE");
  });
});
