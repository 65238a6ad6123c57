import type { LanguageModel, ModelMessage, SystemModelMessage, ToolSet } from "ai";
import { AgentError } from "../errors/agent-error.js";
import type { Message, Part } from "../types/content.js";
import type { FinishReason } from "../types/snapshot.js";
import { usageOf, type Usage } from "../types/usage.js";
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from "./model.js";
import { generationCancelled } from "./generation-cancelled.js";

/** Default per-call deadline of hosted models (ms); override with config `timeoutMs`. */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;

/** Generation settings the AI SDK takes as call options (every other config key becomes a provider option). */
const CALL_SETTINGS = [
  "temperature",
  "maxOutputTokens",
  "topP",
  "topK",
  "stopSequences",
  "seed",
  "presencePenalty",
  "frequencyPenalty",
] as const;

/**
 * A hosted model reached through an AI SDK provider (`openai/…`, `google/…`,
 * `anthropic/…`). Each `generate` is one streamed provider call with tools
 * declared but never executed by the SDK: tool requests come back as
 * `toolRequest` parts for the agent's tool loop. The provider model is created
 * on the first call (so a missing API key is reported then, not at start-up).
 * Provider errors reject as AgentError (see `mapProviderError` in provider-errors.ts); the call
 * is bounded by config `timeoutMs` (default {@link DEFAULT_MODEL_TIMEOUT_MS})
 * and, unless config `maxRetries` says otherwise, not retried.
 */
export class AiSdkModel implements Model {
  readonly name: string;
  private readonly provider: string;
  private readonly create: () => Promise<LanguageModel>;
  private model: LanguageModel | undefined;

  constructor(name: string, create: () => Promise<LanguageModel>) {
    this.name = name;
    this.provider = name.split("/")[0] ?? name;
    this.create = create;
  }

  async generate(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    this.model ??= await this.create();
    const config = { ...request.config };
    const timeoutMs = numberSetting(config, "timeoutMs") ?? DEFAULT_MODEL_TIMEOUT_MS;
    const maxRetries = numberSetting(config, "maxRetries") ?? 0;
    const settings: Record<string, unknown> = {};
    for (const key of CALL_SETTINGS) {
      if (config[key] !== undefined) settings[key] = config[key];
      delete config[key];
    }
    // The AI SDK is loaded on a hosted model's first call, not when agentd starts (most of a start's
    // module loading otherwise; the offline models never need it).
    const [{ streamText, jsonSchema }, { mapProviderError }] = await Promise.all([
      import("ai"),
      import("./provider-errors.js"),
    ]);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new AgentError("DEADLINE_EXCEEDED", "deadline")), timeoutMs);
    const signal = AbortSignal.any([options.signal, deadline.signal]);
    const { instructions, messages } = toModelMessages(request.messages);
    const content: Part[] = [];
    let finishReason: FinishReason = "stop";
    let usage: Usage | undefined;
    let failure: unknown;
    try {
      const result = streamText({
        model: this.model,
        ...(instructions.length > 0 ? { instructions } : {}),
        messages,
        allowSystemInMessages: true,
        ...(request.tools?.length ? { tools: toolSet(request, jsonSchema) } : {}),
        ...settings,
        ...(Object.keys(config).length > 0 ? { providerOptions: { [this.provider]: config as never } } : {}),
        maxRetries,
        abortSignal: signal,
        onError: () => {},
      });
      for await (const part of result.fullStream) {
        if (part.type === "text-delta" && part.text) {
          appendText(content, "text", part.text);
          await options.onChunk?.({ role: "model", content: [{ text: part.text }], index: 0 });
        } else if (part.type === "reasoning-delta" && part.text) {
          appendText(content, "reasoning", part.text);
          await options.onChunk?.({ role: "model", content: [{ reasoning: part.text }], index: 0 });
        } else if (part.type === "tool-call") {
          const toolRequest = { toolRequest: { ref: part.toolCallId, name: part.toolName, input: part.input } };
          content.push(toolRequest);
          await options.onChunk?.({ role: "model", content: [toolRequest], index: 0 });
        } else if (part.type === "finish") {
          finishReason = mapFinishReason(part.finishReason);
          usage = usageOf(part.totalUsage?.inputTokens, part.totalUsage?.outputTokens, part.totalUsage?.totalTokens);
        } else if (part.type === "error") {
          failure = part.error;
        } else if (part.type === "abort") {
          failure = generationCancelled(signal);
        }
      }
    } catch (err) {
      failure = err;
    } finally {
      clearTimeout(timer);
    }
    if (deadline.signal.aborted && !options.signal.aborted) {
      throw new AgentError(
        "DEADLINE_EXCEEDED",
        `model "${this.name}" did not answer within ${timeoutMs} ms (set config.timeoutMs to wait longer)`,
      );
    }
    if (options.signal.aborted) throw generationCancelled(options.signal);
    if (failure !== undefined) throw mapProviderError(failure, this.name);
    if (content.length === 0) content.push({ text: "" });
    return { message: { role: "model", content }, finishReason, ...(usage ? { usage } : {}) };
  }
}

function numberSetting(config: Record<string, unknown>, key: string): number | undefined {
  const value = config[key];
  delete config[key];
  return typeof value === "number" && value >= 0 ? value : undefined;
}

function appendText(content: Part[], kind: "text" | "reasoning", delta: string): void {
  const last = content.at(-1);
  if (last && last[kind] !== undefined) last[kind] += delta;
  else content.push({ [kind]: delta });
}

function mapFinishReason(reason: string): FinishReason {
  switch (reason) {
    case "stop":
    case "tool-calls":
      return "stop";
    case "length":
      return "length";
    case "content-filter":
      return "blocked";
    case "interrupted":
      return "interrupted";
    case "other":
      return "other";
    default:
      return "unknown";
  }
}

function toolSet(request: ModelRequest, jsonSchema: typeof import("ai").jsonSchema): ToolSet {
  const tools: ToolSet = {};
  for (const t of request.tools ?? []) {
    tools[t.name] = { description: t.description, inputSchema: jsonSchema(t.inputSchema as never) } as ToolSet[string];
  }
  return tools;
}

/**
 * Our messages as AI SDK model messages. Leading system messages become the
 * call's instructions (each provider places them where its API wants system
 * text); later ones stay in place.
 */
export function toModelMessages(history: readonly Message[]): {
  instructions: SystemModelMessage[];
  messages: ModelMessage[];
} {
  const instructions: SystemModelMessage[] = [];
  const messages: ModelMessage[] = [];
  let leading = true;
  for (const message of history) {
    if (message.role === "system") {
      const system: SystemModelMessage = { role: "system", content: textOf(message.content) };
      (leading ? instructions : messages).push(system);
      continue;
    }
    leading = false;
    if (message.role === "user") {
      messages.push({ role: "user", content: message.content.flatMap(userPart) });
    } else if (message.role === "model") {
      messages.push({ role: "assistant", content: message.content.flatMap(assistantPart) });
    } else {
      const results = message.content.flatMap((p) =>
        p.toolResponse
          ? [
              {
                type: "tool-result" as const,
                toolCallId: p.toolResponse.ref ?? p.toolResponse.name,
                toolName: p.toolResponse.name,
                output: { type: "json" as const, value: (p.toolResponse.output ?? null) as never },
              },
            ]
          : [],
      );
      if (results.length > 0) messages.push({ role: "tool", content: results });
    }
  }
  return { instructions, messages };
}

function textOf(parts: Part[]): string {
  return parts.map((p) => p.text ?? (p.data !== undefined ? JSON.stringify(p.data) : "")).join("");
}

function userPart(part: Part): Exclude<Extract<ModelMessage, { role: "user" }>["content"], string> {
  if (part.text !== undefined) return [{ type: "text", text: part.text }];
  if (part.media)
    return [
      { type: "file", data: new URL(part.media.url), mediaType: part.media.contentType ?? "application/octet-stream" },
    ];
  if (part.data !== undefined) return [{ type: "text", text: JSON.stringify(part.data) }];
  return [];
}

function assistantPart(part: Part): Exclude<Extract<ModelMessage, { role: "assistant" }>["content"], string> {
  if (part.text !== undefined) return part.text === "" ? [] : [{ type: "text", text: part.text }];
  if (part.reasoning !== undefined) return [{ type: "reasoning", text: part.reasoning }];
  if (part.toolRequest) {
    return [
      {
        type: "tool-call",
        toolCallId: part.toolRequest.ref ?? part.toolRequest.name,
        toolName: part.toolRequest.name,
        input: part.toolRequest.input ?? {},
      },
    ];
  }
  if (part.data !== undefined) return [{ type: "text", text: JSON.stringify(part.data) }];
  return [];
}
