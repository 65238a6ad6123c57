import { messageText, type Message, type Part, type ToolRequest } from "../types/content.js";
import type { FinishReason } from "../types/snapshot.js";
import { splitIntoChunks } from "./echo-model.js";
import { toolRequestsOf, type Model, type ModelCallOptions, type ModelRequest, type ModelResponse } from "./model.js";
import { generationCancelled } from "./generation-cancelled.js";

/** One scripted answer: text, tool requests (refs are filled in when absent), or both. */
export interface ScriptedReply {
  text?: string;
  toolRequests?: ToolRequest[];
  finishReason?: FinishReason;
}

/** Decides the scripted model's answer to a request. */
export type ModelScript = (request: ModelRequest) => ScriptedReply | Promise<ScriptedReply>;

/**
 * The default script, driven by the conversation so it works over the wire:
 *
 * - after tool responses (the last message has role `tool`) it answers
 *   `tool results: <name>=<json output>, ...`;
 * - when the last user message has lines `call <tool> <json input>`, it
 *   requests those tools (several lines = parallel calls, in line order);
 * - otherwise it answers `scripted: <user text>`, followed by
 *   `(system: <text>)` when the request had system messages.
 */
export const directiveScript: ModelScript = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool") {
    const results = last.content.flatMap((p) =>
      p.toolResponse ? [`${p.toolResponse.name}=${JSON.stringify(p.toolResponse.output ?? null)}`] : [],
    );
    return { text: `tool results: ${results.join(", ")}` };
  }
  const lastUser = [...request.messages].reverse().find((m) => m.role === "user");
  const text = messageText(lastUser);
  const calls = text
    .split("\n")
    .map((line) => /^\s*call\s+(\S+)\s*(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null);
  if (calls.length > 0) {
    return {
      toolRequests: calls.map(([, name, raw]) => ({ name: name!, input: parseInput(raw!.trim()) })),
    };
  }
  const system = request.messages
    .filter((m) => m.role === "system")
    .map(messageText)
    .join("\n")
    .trim();
  return { text: `scripted: ${text}${system ? `\n(system: ${system})` : ""}` };
};

function parseInput(raw: string): unknown {
  if (raw === "") return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * A deterministic offline model that can call tools: no network, no API key.
 * It answers with its script's reply, streaming the text word by word and then
 * one chunk holding the tool requests. Tool request refs it makes up are
 * `call-<n>`, unique within the conversation. Honours cancellation.
 */
export class ScriptedModel implements Model {
  readonly name: string;
  private readonly script: ModelScript;

  constructor(script: ModelScript = directiveScript, name = "scripted") {
    this.script = script;
    this.name = name;
  }

  async generate(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    throwIfAborted(options.signal);
    const reply = await this.script(request);
    throwIfAborted(options.signal);
    const content: Part[] = [];
    if (reply.text !== undefined && reply.text !== "") {
      for (const piece of splitIntoChunks(reply.text))
        await options.onChunk?.({ role: "model", content: [{ text: piece }], index: 0 });
      content.push({ text: reply.text });
    }
    let nextRef = request.messages.reduce((n, m) => n + toolRequestsOf(m).length, 0) + 1;
    const requests = (reply.toolRequests ?? []).map((r) => ({
      toolRequest: { ...r, ref: r.ref ?? `call-${nextRef++}` },
    }));
    if (requests.length > 0) {
      await options.onChunk?.({ role: "model", content: requests, index: 0 });
      content.push(...requests);
    }
    if (content.length === 0) content.push({ text: "" });
    const message: Message = { role: "model", content, metadata: { requestMessages: request.messages.length } };
    return { message, finishReason: reply.finishReason ?? "stop" };
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw generationCancelled(signal);
}
