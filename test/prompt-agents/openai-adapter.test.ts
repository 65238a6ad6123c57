// The openai/<model> adapter against a local server speaking the Chat Completions protocol.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { builtinModelResolver } from "../../src/models/model-resolver.js";
import type { ModelRequest, ModelResponse } from "../../src/models/model.js";
import type { ModelChunk } from "../../src/types/agent-io.js";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../harness/fake-openai-server.js";

let fake: FakeOpenAiServer;
beforeAll(async () => {
  fake = await startFakeOpenAiServer();
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => fake.reset());

const weatherTool = {
  name: "weather",
  description: "Current weather for a city.",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
};

function model(env: NodeJS.ProcessEnv = { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test" }) {
  return builtinModelResolver({ env })("openai/test-model");
}

async function generate(request: ModelRequest, signal = new AbortController().signal): Promise<{ response: ModelResponse; chunks: ModelChunk[] }> {
  const chunks: ModelChunk[] = [];
  const response = await model().generate(request, { signal, onChunk: (c) => chunks.push(c) });
  return { response, chunks };
}

async function failure(request: ModelRequest, m = model()): Promise<AgentError> {
  const err = await m.generate(request, { signal: new AbortController().signal }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentError);
  return err as AgentError;
}

const hello: ModelRequest = { messages: [{ role: "user", content: [{ text: "hello" }] }] };

describe("openai adapter: the request", () => {
  it("streams from /v1/chat/completions with the model id and the API key", async () => {
    await generate(hello);
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
    await generate({ ...hello, tools: [weatherTool] });
    expect(fake.requests[0]!.body.tools).toEqual([
      { type: "function", function: { name: "weather", description: "Current weather for a city.", parameters: weatherTool.inputSchema } },
    ]);
  });

  it("sends tool requests as assistant tool_calls and tool responses as tool messages", async () => {
    await generate({
      messages: [
        { role: "user", content: [{ text: "weather?" }] },
        { role: "model", content: [{ toolRequest: { ref: "call_9", name: "weather", input: { city: "Oslo" } } }] },
        { role: "tool", content: [{ toolResponse: { ref: "call_9", name: "weather", output: { forecast: "snow" } } }] },
      ],
      tools: [weatherTool],
    });
    const [, assistant, tool] = fake.requests[0]!.body.messages;
    expect(assistant).toMatchObject({ role: "assistant", tool_calls: [{ id: "call_9", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }] });
    expect(tool).toEqual({ role: "tool", tool_call_id: "call_9", content: '{"forecast":"snow"}' });
  });

  it("passes generation config (temperature, max tokens)", async () => {
    await generate({ ...hello, config: { temperature: 0.2, maxOutputTokens: 64 } });
    expect(fake.requests[0]!.body).toMatchObject({ temperature: 0.2, max_tokens: 64 });
  });
});

describe("openai adapter: the response", () => {
  it("streams text deltas as model chunks and returns the whole text", async () => {
    fake.enqueue({ kind: "stream", text: ["Hel", "lo ", "there"] });
    const { response, chunks } = await generate(hello);
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
    const { response, chunks } = await generate({ ...hello, tools: [weatherTool] });
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
    const { response } = await generate(hello);
    expect(response.finishReason).toBe(ours);
  });
});

describe("openai adapter: errors", () => {
  it.each([
    [400, "INVALID_ARGUMENT"],
    [401, "UNAUTHENTICATED"],
    [403, "PERMISSION_DENIED"],
    [404, "NOT_FOUND"],
    [429, "RESOURCE_EXHAUSTED"],
    [500, "UNAVAILABLE"],
    [503, "UNAVAILABLE"],
  ] as const)("HTTP %i maps to its status with the provider's message", async (status, expected) => {
    fake.enqueue({ kind: "error", status, message: `provider says ${status}` });
    const err = await failure(hello);
    expect(err.status).toBe(expected);
    expect(err.message).toContain(`provider says ${status}`);
    expect(err.details).toMatchObject({ httpStatus: status });
  });

  it("a call slower than config.timeoutMs fails with DEADLINE_EXCEEDED", async () => {
    fake.enqueue({ kind: "hang" });
    const err = await failure({ ...hello, config: { timeoutMs: 300 } });
    expect(err.status).toBe("DEADLINE_EXCEEDED");
    expect(err.message).toContain("300 ms");
  });

  it("a cancelled call fails with CANCELLED", async () => {
    fake.enqueue({ kind: "hang" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const err = await model().generate(hello, { signal: controller.signal }).catch((e: unknown) => e);
    expect((err as AgentError).status).toBe("CANCELLED");
  });

  it("a missing API key fails with FAILED_PRECONDITION naming OPENAI_API_KEY, without a request", async () => {
    const err = await failure(hello, model({}));
    expect(err.status).toBe("FAILED_PRECONDITION");
    expect(err.message).toContain("OPENAI_API_KEY");
    expect(fake.requests).toHaveLength(0);
  });

  it("an unreachable server fails with UNAVAILABLE", async () => {
    const err = await failure(hello, model({ OPENAI_BASE_URL: "http://127.0.0.1:1/v1", OPENAI_API_KEY: "k" }));
    expect(err.status).toBe("UNAVAILABLE");
  });
});
