// defineAgent over the wire: a real agentd serving test/fixtures/prompt-agents.ts (scripted model).
import { describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { agentErrorFromWire, messageFromWire, modelChunkFromWire, snapshotFromWire } from "../../src/protocol/index.js";
import type { Message } from "../../src/types/content.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { useAgentd } from "../harness/use-agentd.js";

const agentd = useAgentd({ args: ["test/fixtures/prompt-agents.ts"] });

async function history(
  agent: string,
  snapshotId: string,
): Promise<{ messages: Message[]; custom: unknown; artifacts: unknown[] }> {
  const { snapshot } = await agentd.client.getSnapshot({ agent, snapshotId });
  const state = snapshotFromWire(snapshot!).state!;
  return { messages: state.messages, custom: state.custom, artifacts: state.artifacts };
}

describe("inline prompt agent with tools", () => {
  it("a tool that updates custom state streams patches and its artifact during the turn", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "shopper" },
      input: textInput('call add_item {"item":"milk"}'),
    });
    const turn = await chat.nextTurn();
    const kinds = turn.chunks.map((c) =>
      c.customPatch.length > 0 ? "patch" : c.artifact ? "artifact" : c.modelChunk ? "model" : "end",
    );
    expect(kinds.indexOf("patch")).toBeGreaterThanOrEqual(0);
    expect(kinds.indexOf("patch")).toBeLessThan(kinds.lastIndexOf("model"));
    expect(turn.chunks.find((c) => c.artifact)?.artifact?.name).toBe("list.md");
    const { output } = await chat.finish();
    expect(output.finishReason).toBe(FinishReason.STOP);
    expect(messageFromWire(output.message!).content[0]?.text).toBe('tool results: add_item={"count":1}');
  });

  it("streams the model's tool requests, the tool responses and the final answer as model chunks", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "shopper" },
      input: textInput('call add_item {"item":"tea"}'),
    });
    const turn = await chat.nextTurn();
    const chunks = turn.chunks.filter((c) => c.modelChunk).map((c) => modelChunkFromWire(c.modelChunk!));
    expect(chunks[0]?.content[0]?.toolRequest).toMatchObject({ name: "add_item", input: { item: "tea" } });
    expect(chunks.find((c) => c.role === "tool")?.content[0]?.toolResponse).toMatchObject({
      name: "add_item",
      output: { count: 1 },
    });
    expect(chunksText(turn.chunks)).toBe('tool results: add_item={"count":1}');
    expect(new Set(chunks.map((c) => c.index))).toEqual(new Set([0, 1, 2]));
    await chat.finish();
  });

  it("the snapshot after a tool loop holds request, parallel responses in the model's order, answer and state", async () => {
    const { output } = await agentd.client.run({
      init: { agent: "shopper" },
      input: textInput('call add_item {"item":"milk"}\ncall add_item {"item":"eggs"}'),
    });
    const { messages, custom, artifacts } = await history("shopper", output!.snapshotId);
    expect(messages.map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
    expect(messages[1]!.content.map((p) => p.toolRequest?.input)).toEqual([{ item: "milk" }, { item: "eggs" }]);
    expect(messages[2]!.content.map((p) => [p.toolResponse?.ref, p.toolResponse?.output])).toEqual([
      [messages[1]!.content[0]!.toolRequest!.ref, { count: 1 }],
      [messages[1]!.content[1]!.toolRequest!.ref, { count: 2 }],
    ]);
    expect(custom).toEqual({ items: ["milk", "eggs"] });
    expect(artifacts).toEqual([{ name: "list.md", parts: [{ text: "- milk\n- eggs" }] }]);
  });

  it("sends the system prompt before the history every turn without storing or duplicating it", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "shopper" }, input: textInput("hello") });
    const first = await chat.nextTurn();
    chat.sendText("again");
    const second = await chat.nextTurn();
    expect(chunksText(first.chunks)).toBe("scripted: hello\n(system: You keep the user's shopping list.)");
    expect(chunksText(second.chunks)).toBe("scripted: again\n(system: You keep the user's shopping list.)");
    const { messages } = await history("shopper", second.turnEnd.snapshotId);
    expect(messages.map((m) => m.role)).toEqual(["user", "model", "user", "model"]);
    // The model saw 1 system message + the history: 2 messages, then 4.
    expect(messages.filter((m) => m.role === "model").map((m) => m.metadata?.requestMessages)).toEqual([2, 4]);
    await chat.finish();
  });

  it("answers model input that fails the tool's schema with an error the model sees", async () => {
    const { output } = await agentd.client.run({
      init: { agent: "shopper" },
      input: textInput('call add_item {"item":""}'),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    const { messages, custom } = await history("shopper", output!.snapshotId);
    const response = messages[2]!.content[0]!.toolResponse;
    expect(response?.output).toEqual({ error: expect.stringContaining('invalid input for tool "add_item": item:') });
    expect(custom).toBeUndefined();
  });

  it("answers a request for an unknown tool with an error naming the available tools", async () => {
    const { output } = await agentd.client.run({ init: { agent: "shopper" }, input: textInput("call teleport {}") });
    const { messages } = await history("shopper", output!.snapshotId);
    expect(messages[2]!.content[0]!.toolResponse?.output).toEqual({
      error: 'unknown tool "teleport"; available tools: add_item',
    });
  });

  it("fails the turn in-band with RESOURCE_EXHAUSTED naming the limit when the model exceeds maxToolIterations", async () => {
    const { output } = await agentd.client.run({ init: { agent: "looper" }, input: textInput("go") });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("RESOURCE_EXHAUSTED");
    expect(output!.error?.message).toContain("maxToolIterations = 2");
    expect(agentErrorFromWire(output!.error!).details).toEqual({ maxToolIterations: 2 });
    expect(output!.snapshotId).toBe("");
  });
});
