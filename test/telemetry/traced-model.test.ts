// A traced model (what the runtime calls when telemetry is on): each call in a GenAI
// client span, its tokens counted in agentd.tokens, its usage passed on, read
// through the SDK registered in this process with in-memory exporters.
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { DataPointType } from "@opentelemetry/sdk-metrics";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Model, ModelResponse } from "../../src/models/model.js";
import { traceModel } from "../../src/runtime/telemetry/traced-model.js";
import type { Usage } from "../../src/types/usage.js";
import { HELLO } from "../harness/model-calls.js";
import { registerInProcessTelemetry, type InProcessTelemetry } from "./in-process-telemetry.js";

let telemetry: InProcessTelemetry;
beforeEach(() => {
  telemetry = registerInProcessTelemetry();
});
afterEach(async () => {
  await telemetry.stop();
});

const USAGE: Usage = { inputTokens: 12, outputTokens: 5, totalTokens: 17 };

/** A model named `name` that answers every request with `response`. */
function answering(name: string, response: Partial<ModelResponse> = {}): Model {
  return {
    name,
    generate: async () => ({
      message: { role: "model", content: [{ text: "hi" }] },
      finishReason: "stop",
      ...response,
    }),
  };
}

async function callOnce(model: Model): Promise<ModelResponse> {
  return model.generate(HELLO, { signal: new AbortController().signal });
}

describe("traceModel", () => {
  it("calls the model in a client span `chat <model>` with the GenAI request, response and usage attributes", async () => {
    const traced = traceModel(answering("openai/gpt-4o-mini", { usage: USAGE, finishReason: "length" }), {
      agent: "helper",
    });
    await callOnce(traced);
    const [span, ...others] = telemetry.spans();
    expect(others).toEqual([]);
    expect(span!.name).toBe("chat openai/gpt-4o-mini");
    expect(span!.kind).toBe(SpanKind.CLIENT);
    expect(span!.attributes).toEqual({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "openai/gpt-4o-mini",
      "gen_ai.provider.name": "openai",
      "gen_ai.response.finish_reasons": ["length"],
      "gen_ai.usage.input_tokens": 12,
      "gen_ai.usage.output_tokens": 5,
    });
  });

  it("names the provider of hosted models by their prefix, and none for other models", async () => {
    for (const name of ["google/gemini-2.5-flash", "anthropic/claude-sonnet-4", "echo", "scripted/openai"])
      await callOnce(traceModel(answering(name), { agent: "helper" }));
    expect(telemetry.spans().map((s) => [s.name, s.attributes["gen_ai.provider.name"]])).toEqual([
      ["chat google/gemini-2.5-flash", "gcp.gemini"],
      ["chat anthropic/claude-sonnet-4", "anthropic"],
      ["chat echo", undefined],
      ["chat scripted/openai", undefined],
    ]);
  });

  it("counts the call's tokens in agentd.tokens by agent, model and direction", async () => {
    await callOnce(traceModel(answering("openai/gpt-4o-mini", { usage: USAGE }), { agent: "helper" }));
    const tokens = await telemetry.metric("agentd.tokens");
    expect(tokens.dataPointType).toBe(DataPointType.SUM);
    expect(tokens.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
      [{ "agentd.agent": "helper", "gen_ai.request.model": "openai/gpt-4o-mini", "gen_ai.token.type": "input" }, 12],
      [{ "agentd.agent": "helper", "gen_ai.request.model": "openai/gpt-4o-mini", "gen_ai.token.type": "output" }, 5],
    ]);
  });

  it("passes the call's usage to onUsage and resolves with the model's response unchanged", async () => {
    const response: ModelResponse = {
      message: { role: "model", content: [{ text: "hi" }] },
      finishReason: "stop",
      usage: USAGE,
    };
    const seen: Usage[] = [];
    const traced = traceModel(answering("echo", response), { agent: "helper", onUsage: (u) => seen.push(u) });
    expect(traced.name).toBe("echo");
    await expect(callOnce(traced)).resolves.toEqual(response);
    expect(seen).toEqual([USAGE]);
  });

  it("records no usage, counts no tokens and calls no onUsage when the model reported no usage", async () => {
    const seen: Usage[] = [];
    await callOnce(traceModel(answering("echo"), { agent: "helper", onUsage: (u) => seen.push(u) }));
    const [span] = telemetry.spans();
    expect(Object.keys(span!.attributes)).not.toContain("gen_ai.usage.input_tokens");
    expect(Object.keys(span!.attributes)).not.toContain("gen_ai.usage.output_tokens");
    expect((await telemetry.metrics()).map((m) => m.descriptor.name)).not.toContain("agentd.tokens");
    expect(seen).toEqual([]);
  });

  it("fails the span of a cancelled call as CANCELLED and rejects as the model did", async () => {
    const aborted = Object.assign(new Error("the call was aborted"), { name: "AbortError" });
    const model: Model = {
      name: "echo",
      generate: async () => {
        throw aborted;
      },
    };
    await expect(callOnce(traceModel(model, { agent: "helper" }))).rejects.toBe(aborted);
    const [span] = telemetry.spans();
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: "the call was aborted" });
    expect(span!.attributes["error.type"]).toBe("CANCELLED");
  });
});
