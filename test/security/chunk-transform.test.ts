import { describe, expect, it } from "vitest";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { defineCustomAgent } from "../../src/runtime/agents/custom-agent.js";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { messageText } from "../../src/types/content.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

// The chunk transform is a redaction hook ("Transforms shape what leaves the server", README): every
// chunk the client is streamed must have gone through it, whatever its kind (model text, tool
// output, artifact, custom-state patch, turn end) and in every turn of a multi-turn invocation;
// a chunk it drops never reaches the client. In-process: the server streams exactly these chunks.

/** A compact label of a chunk's kind and content. */
function label(chunk: AgentStreamChunk): string {
  if (chunk.modelChunk) return `${chunk.modelChunk.role}:${chunk.modelChunk.content.map((p) => p.text ?? "").join("")}`;
  if (chunk.artifact) return `artifact:${chunk.artifact.name ?? ""}`;
  if (chunk.customPatch)
    return `patch:${JSON.stringify(chunk.customPatch.map((op) => ("value" in op ? op.value : op.path)))}`;
  if (chunk.turnEnd) return `turnEnd:${chunk.turnEnd.turnIndex}`;
  return "other";
}

/** An agent whose turns stream one chunk of every kind, two of them holding "SECRET", and its transform's log. */
function redactingAgent() {
  const seen: string[] = [];
  /** The chunk objects the transform returned: what the client may be streamed. */
  const shaped = new Set<AgentStreamChunk>();
  const agent = defineCustomAgent<{ topic: string }>({
    name: "redacting",
    store: "default",
    transforms: {
      chunk: (chunk) => {
        seen.push(label(chunk));
        if (JSON.stringify(chunk).includes("SECRET")) return null;
        for (const part of chunk.modelChunk?.content ?? [])
          if (part.text) part.text = part.text.replaceAll("private", "*******");
        shaped.add(chunk);
        return chunk;
      },
    },
    turn: async (input, ctx) => {
      const text = messageText(input.message);
      ctx.responder.sendModelChunk({ role: "model", content: [{ text: `private reply to ${text}` }] });
      ctx.responder.sendModelChunk({ role: "model", content: [{ text: `SECRET model text about ${text}` }] });
      ctx.responder.sendModelChunk({ role: "tool", content: [{ text: `tool output for ${text}` }] });
      ctx.responder.sendArtifact({ name: `public-${text}`, parts: [{ text: "shown" }] });
      ctx.responder.sendArtifact({ name: `hidden-${text}`, parts: [{ text: "SECRET artifact" }] });
      ctx.session.updateCustom(() => ({ topic: text }));
      ctx.session.addMessages({
        role: "model",
        content: [{ text: `private reply to ${text}; SECRET model text about ${text}` }],
      });
    },
  });
  const store = new InMemorySessionStore();
  new AgentRegistry({ defaultStore: store }).register(agent);
  return { agent, store, seen, shaped };
}

describe("chunk transform", () => {
  it("is applied to every streamed chunk of every kind and turn; what it drops never reaches the client", async () => {
    const { agent, store, seen, shaped } = redactingAgent();
    const connection = await agent.connect();
    const streamed: AgentStreamChunk[] = [];
    const reading = (async () => {
      for await (const chunk of connection.stream) streamed.push(chunk);
    })();
    connection.sendText("one");
    connection.sendText("two");
    const output = await connection.output();
    await reading;

    const perTurn = (t: string, i: number): string[] => [
      `model:private reply to ${t}`,
      `model:SECRET model text about ${t}`,
      `tool:tool output for ${t}`,
      `artifact:public-${t}`,
      `artifact:hidden-${t}`,
      `patch:[{"topic":"${t}"}]`,
      `turnEnd:${i}`,
    ];
    // The transform saw every chunk the turns produced, in order.
    expect(seen).toEqual([...perTurn("one", 0), ...perTurn("two", 1)]);
    // The client got exactly what it returned, in order, plus only the stream position the runtime
    // numbers it with, so no chunk of any kind bypassed it.
    expect(streamed.map(({ sequence: _sequence, ...chunk }) => chunk)).toEqual([...shaped]);
    expect(streamed.map((c) => c.sequence)).toEqual(streamed.map((_, i) => i + 1));
    expect(streamed.map(label)).toEqual(
      [...perTurn("one", 0), ...perTurn("two", 1)]
        .filter((l) => !l.includes("SECRET") && !l.startsWith("artifact:hidden"))
        .map((l) => l.replace("private", "*******")),
    );
    expect(JSON.stringify(streamed)).not.toContain("SECRET");
    expect(connection.custom).toEqual({ topic: "two" });
    // Never applied to what is stored.
    const stored = await store.getRecord(output.snapshotId!);
    expect(JSON.stringify(stored!.checkpoint ?? stored!.delta)).toContain(
      "private reply to two; SECRET model text about two",
    );
  });
});
