// Token usage as models report it: the echo model's deterministic word counts
// and the AI SDK's provider usage (a local server speaking the OpenAI protocol).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EchoModel, echoUsage } from "../../src/models/echo-model.js";
import { builtinModelResolver } from "../../src/models/model-resolver.js";
import { addUsage, usageOf } from "../../src/types/usage.js";
import { startFakeOpenAiServer, type FakeOpenAiServer } from "../harness/fake-openai-server.js";
import { generateWith, HELLO } from "../harness/model-calls.js";

describe("the echo model's usage", () => {
  it("is the words of the last user message in, the words of the reply out", async () => {
    const { response } = await generateWith(new EchoModel(), {
      messages: [
        { role: "user", content: [{ text: "an earlier message" }] },
        { role: "model", content: [{ text: "echo: an earlier message" }] },
        { role: "user", content: [{ text: "  hello   traced\nworld " }] },
      ],
    });
    expect(response.message.content[0]!.text).toBe("echo:   hello   traced\nworld ");
    expect(response.usage).toEqual({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
  });

  it("counts an empty message as no input when generating (one output word: the prefix)", async () => {
    const { response } = await generateWith(new EchoModel(), { messages: [{ role: "user", content: [{ text: "" }] }] });
    expect(response.usage).toEqual({ inputTokens: 0, outputTokens: 1, totalTokens: 1 });
  });

  it("counts an empty message as no input", () => {
    expect(echoUsage("", "echo: ")).toEqual({ inputTokens: 0, outputTokens: 1, totalTokens: 1 });
  });
});

describe("usage arithmetic", () => {
  it("adds field by field; nothing plus nothing stays nothing", () => {
    expect(addUsage(undefined, undefined)).toBeUndefined();
    expect(addUsage({ inputTokens: 1, outputTokens: 2, totalTokens: 3 }, undefined)).toEqual({
      inputTokens: 1,
      outputTokens: 2,
      totalTokens: 3,
    });
    expect(
      addUsage(
        { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
        { inputTokens: 10, outputTokens: 20, totalTokens: 31 },
      ),
    ).toEqual({
      inputTokens: 11,
      outputTokens: 22,
      totalTokens: 34,
    });
  });

  it("takes provider figures as they come: missing ones are 0, a missing total is the sum", () => {
    expect(usageOf(undefined, undefined)).toBeUndefined();
    expect(usageOf(7, undefined)).toEqual({ inputTokens: 7, outputTokens: 0, totalTokens: 7 });
    expect(usageOf(7, 3, 12)).toEqual({ inputTokens: 7, outputTokens: 3, totalTokens: 12 });
  });
});

describe("a hosted model's usage (openai/<model> against a local Chat Completions server)", () => {
  let fake: FakeOpenAiServer;
  beforeAll(async () => {
    fake = await startFakeOpenAiServer();
  });
  afterAll(async () => {
    await fake?.close();
  });

  it("is what the provider reported in its last stream chunk", async () => {
    const model = builtinModelResolver({ env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test" } })(
      "openai/test-model",
    );
    const { response } = await generateWith(model, HELLO);
    // The fake reports prompt_tokens 3, completion_tokens 2, total_tokens 5.
    expect(response.usage).toEqual({ inputTokens: 3, outputTokens: 2, totalTokens: 5 });
  });
});
