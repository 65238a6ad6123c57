// The google/<model> adapter against a local server speaking the Gemini API
// (test/harness/fake-google-server.ts): the requests @ai-sdk/google sends for our messages
// and tools, and how streamed chunks, finish reasons and errors map back.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { builtinModelResolver } from "../../src/models/model-resolver.js";
import type { ModelRequest } from "../../src/models/model.js";
import { sessionStateFromWire } from "../../src/protocol/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startFakeGoogleServer, type FakeGoogleServer } from "../harness/fake-google-server.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { COMMON_HTTP_STATUS_MAPPING, failureOf, generateWith, HELLO, WEATHER_TOOL } from "../harness/model-calls.js";

let fake: FakeGoogleServer;
beforeAll(async () => {
  fake = await startFakeGoogleServer();
});
afterAll(async () => {
  await fake?.close();
});
beforeEach(() => fake.reset());

const MODEL = "gemini-2.5-flash";

function model() {
  return builtinModelResolver({
    env: { GOOGLE_GENERATIVE_AI_BASE_URL: fake.baseUrl, GOOGLE_GENERATIVE_AI_API_KEY: "g-test" },
  })(`google/${MODEL}`);
}

function generate(request: ModelRequest) {
  return generateWith(model(), request);
}

function failure(request: ModelRequest) {
  return failureOf(model(), request);
}

describe("google adapter: the request", () => {
  it("streams from {base}/models/{model}:streamGenerateContent?alt=sse with x-goog-api-key", async () => {
    await generate(HELLO);
    const [request] = fake.requests;
    expect(request!.path).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
    expect(request!.headers["x-goog-api-key"]).toBe("g-test");
  });

  it("sends the system prompt as systemInstruction and the history as user/model contents", async () => {
    await generate({
      messages: [
        { role: "system", content: [{ text: "Be brief." }] },
        { role: "user", content: [{ text: "one" }] },
        { role: "model", content: [{ text: "two" }] },
        { role: "user", content: [{ text: "three" }] },
      ],
    });
    const { body } = fake.requests[0]!;
    expect(body.systemInstruction).toEqual({ parts: [{ text: "Be brief." }] });
    expect(body.contents).toEqual([
      { role: "user", parts: [{ text: "one" }] },
      { role: "model", parts: [{ text: "two" }] },
      { role: "user", parts: [{ text: "three" }] },
    ]);
  });

  it("declares tools as functionDeclarations with their JSON Schema", async () => {
    await generate({ ...HELLO, tools: [WEATHER_TOOL] });
    expect(fake.requests[0]!.body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: "weather",
            description: "Current weather for a city.",
            parametersJsonSchema: WEATHER_TOOL.inputSchema,
          },
        ],
      },
    ]);
  });

  it("sends tool requests as functionCall parts and tool responses as functionResponse parts", async () => {
    await generate({
      messages: [
        { role: "user", content: [{ text: "weather?" }] },
        { role: "model", content: [{ toolRequest: { ref: "fc_9", name: "weather", input: { city: "Oslo" } } }] },
        { role: "tool", content: [{ toolResponse: { ref: "fc_9", name: "weather", output: { forecast: "snow" } } }] },
      ],
      tools: [WEATHER_TOOL],
    });
    const [, call, result] = fake.requests[0]!.body.contents;
    expect(call).toEqual({
      role: "model",
      parts: [{ functionCall: { id: "fc_9", name: "weather", args: { city: "Oslo" } } }],
    });
    expect(result).toEqual({
      role: "user",
      parts: [
        {
          functionResponse: {
            id: "fc_9",
            name: "weather",
            response: { name: "weather", content: { forecast: "snow" } },
          },
        },
      ],
    });
  });

  it("passes generation config (temperature, maxOutputTokens) as generationConfig", async () => {
    await generate({ ...HELLO, config: { temperature: 0.2, maxOutputTokens: 64 } });
    expect(fake.requests[0]!.body.generationConfig).toMatchObject({ temperature: 0.2, maxOutputTokens: 64 });
  });
});

describe("google adapter: the response", () => {
  it("streams text parts as model chunks and returns the whole text", async () => {
    fake.enqueue({ kind: "stream", text: ["Hel", "lo ", "there"] });
    const { response, chunks } = await generate(HELLO);
    expect(chunks.map((c) => c.content[0]?.text)).toEqual(["Hel", "lo ", "there"]);
    expect(response.message).toEqual({ role: "model", content: [{ text: "Hello there" }] });
    expect(response.finishReason).toBe("stop");
  });

  it("turns functionCall parts into toolRequest parts in order, with ids when Gemini sends none", async () => {
    fake.enqueue({
      kind: "stream",
      functionCalls: [
        { name: "weather", args: { city: "Paris" } },
        { name: "weather", args: { city: "Rome" } },
      ],
    });
    const { response } = await generate({ ...HELLO, tools: [WEATHER_TOOL] });
    const requests = response.message.content.map((p) => p.toolRequest!);
    expect(requests.map(({ name, input }) => ({ name, input }))).toEqual([
      { name: "weather", input: { city: "Paris" } },
      { name: "weather", input: { city: "Rome" } },
    ]);
    expect(new Set(requests.map((r) => r.ref)).size).toBe(2);
    expect(response.finishReason).toBe("stop");
  });

  it.each([
    ["STOP", "stop"],
    ["MAX_TOKENS", "length"],
    ["SAFETY", "blocked"],
  ] as const)("maps finishReason %s to %s", async (wire, ours) => {
    fake.enqueue({ kind: "stream", text: ["cut"], finishReason: wire });
    const { response } = await generate(HELLO);
    expect(response.finishReason).toBe(ours);
  });
});

describe("google adapter: errors", () => {
  it.each([...COMMON_HTTP_STATUS_MAPPING, [503, "UNAVAILABLE"]] as const)(
    "HTTP %i maps to %s with Google's message",
    async (code, expected) => {
      fake.enqueue({ kind: "error", code, message: `google says ${code}` });
      const err = await failure(HELLO);
      expect(err.status).toBe(expected);
      expect(err.message).toContain(`google says ${code}`);
      expect(err.details).toMatchObject({ httpStatus: code });
    },
  );

  it("an invalid API key (HTTP 400, reason API_KEY_INVALID) maps to UNAUTHENTICATED", async () => {
    fake.enqueue({
      kind: "error",
      code: 400,
      message: "API key not valid. Please pass a valid API key.",
      reason: "API_KEY_INVALID",
    });
    const err = await failure(HELLO);
    expect(err.status).toBe("UNAUTHENTICATED");
    expect(err.message).toContain("API key not valid");
  });

  it("an error chunk in the middle of the stream maps by its status", async () => {
    fake.enqueue({ kind: "stream-error", code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" });
    const err = await failure(HELLO);
    expect(err.status).toBe("UNAVAILABLE");
    expect(err.message).toContain("The model is overloaded.");
  });
});

describe("google/<model> over the wire", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["test/fixtures/prompt-agents.ts"],
      env: {
        REMOTE_MODEL: `google/${MODEL}`,
        GOOGLE_GENERATIVE_AI_BASE_URL: fake.baseUrl,
        GOOGLE_GENERATIVE_AI_API_KEY: "g-wire",
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("runs the tool loop: functionCall, our tool's functionResponse sent back, streamed final answer", async () => {
    fake.enqueue(
      { kind: "stream", functionCalls: [{ id: "fc_w", name: "weather", args: { city: "Paris" } }] },
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
    expect(first!.body.systemInstruction).toEqual({ parts: [{ text: "Be brief." }] });
    expect(first!.body.tools[0].functionDeclarations[0]).toMatchObject({
      name: "weather",
      parametersJsonSchema: { properties: { city: { type: "string", description: "City name" } } },
    });
    expect(second!.body.contents).toEqual([
      { role: "user", parts: [{ text: "Weather in Paris?" }] },
      { role: "model", parts: [{ functionCall: { id: "fc_w", name: "weather", args: { city: "Paris" } } }] },
      {
        role: "user",
        parts: [
          {
            functionResponse: {
              id: "fc_w",
              name: "weather",
              response: { name: "weather", content: { city: "Paris", forecast: "sunny" } },
            },
          },
        ],
      },
    ]);
  });

  it("a Google 429 fails the turn in-band with RESOURCE_EXHAUSTED", async () => {
    fake.enqueue({ kind: "error", code: 429, message: "Quota exceeded" });
    const { output } = await agentServiceClient(server.baseUrl, "grpc").run({
      init: { agent: "remote" },
      input: textInput("hi"),
    });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("RESOURCE_EXHAUSTED");
    expect(output!.error?.message).toContain("Quota exceeded");
  });
});
