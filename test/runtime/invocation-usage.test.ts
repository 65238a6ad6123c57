// Token usage as an invocation reports it: each model call's tokens add up per turn (on that
// turn's TurnEnd and snapshot record) and per invocation (on the output, or on the background
// row after detach). The echo model's usage is deterministic: input tokens = words of the last
// user message, output tokens = words of the reply (`echo: <text>`).
import { describe, expect, it, vi } from "vitest";
import { drain, harness, recordsOf, register, Rendezvous, turnEndsOf } from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import type { Usage } from "../../src/types/usage.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import { messageText } from "../../src/types/content.js";

vi.setConfig({ testTimeout: 5_000 });

/** The echo model's usage for a user message of `words` words (the reply has two more). */
const echoed = (words: number) => ({ inputTokens: words, outputTokens: words + 1, totalTokens: 2 * words + 1 });

describe("Invocation: token usage", () => {
  it("puts each turn's own tokens on its TurnEnd and its snapshot record", async () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("one");
    connection.sendText("two words");
    await connection.output();
    const ends = turnEndsOf((await reading).chunks);
    expect(ends.map((e) => e.usage)).toEqual([echoed(1), echoed(2)]);
    const records = await recordsOf(store, connection.sessionId);
    expect(records.map((r) => r.usage)).toEqual([echoed(1), echoed(2)]);
  });

  it("adds up every turn's tokens on the output", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
    });
    const connection = await agent.connect();
    connection.sendText("one");
    connection.sendText("two words");
    const output = await connection.output();
    expect(output.usage).toEqual({ inputTokens: 3, outputTokens: 5, totalTokens: 8 });
  });

  it("reports the tokens a failed turn spent on its failed TurnEnd", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (_input, ctx) => {
        await generateModelTurn(ctx, "echo");
        throw new AgentError("INTERNAL", "after the model call");
      },
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("three words here");
    const output = await connection.output();
    expect(turnEndsOf((await reading).chunks)).toEqual([
      { finishReason: "failed", turnIndex: 0, sessionId: connection.sessionId, usage: echoed(3) },
    ]);
    expect(output.usage).toEqual(echoed(3));
  });

  it("answers detach with the tokens spent so far, and puts the detached turns' tokens on the background row", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = register(h.registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        if (messageText(input.message).startsWith("wait")) await gate.at("wait", ctx.turn.signal);
        await generateModelTurn(ctx, "echo");
      },
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("one");
    connection.sendText("wait a b");
    await gate.reached("wait");
    connection.sendText("x y");
    connection.detach();
    const output = await connection.output();
    expect(turnEndsOf((await reading).chunks).map((e) => e.usage)).toEqual([echoed(1)]);
    expect(output).toMatchObject({ finishReason: "detached", usage: echoed(1) });
    gate.release("wait");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    const row = (await h.store.getRecord(output.snapshotId!))!;
    expect(row.status).toBe("completed");
    // Turns 1 ("wait a b": 3 words) and 2 ("x y": 2 words) ran after detach.
    expect(row.usage).toEqual({ inputTokens: 5, outputTokens: 7, totalTokens: 12 });
  });

  it("has added the detached turns' tokens to the session by the time the row reads completed, so releasing the session is all that is left", async () => {
    /** Remembers the session's usage at the moment a row is rewritten to completed. */
    class UsageAtCompletion extends InMemorySessionStore {
      seen: Usage | undefined | "not yet" = "not yet";
      override async updateRecord(
        ...args: Parameters<InMemorySessionStore["updateRecord"]>
      ): ReturnType<InMemorySessionStore["updateRecord"]> {
        const row = await super.updateRecord(...args);
        if (row?.status === "completed") this.seen = (await this.getHead(row.sessionId))?.usage;
        return row;
      }
    }
    const store = new UsageAtCompletion();
    const registry = new AgentRegistry({ defaultStore: store as SessionStore });
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (_input, ctx) => {
        await generateModelTurn(ctx, "echo");
      },
    });
    const connection = await agent.connect();
    connection.sendText("one");
    connection.sendText("x y");
    connection.detach();
    await connection.output();
    expect(await registry.background.drain(4_000)).toBe(0);
    // Turn 0 ("one") committed before detach or ran after it: either way the head holds both turns by then.
    expect(store.seen).toEqual({ inputTokens: 3, outputTokens: 5, totalTokens: 8 });
  });
});
