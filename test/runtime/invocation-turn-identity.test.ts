// What a turn is told about itself and what the turn event reports: a snapshot ID only when
// the turn's end will be written as a snapshot (server-managed, not detached), and the
// turn's duration.
import { describe, expect, it, vi } from "vitest";
import { harness, register, Rendezvous, replyTurn } from "./runtime-fixtures.js";
import type { TurnContext } from "../../src/runtime/agents/agent-function.js";
import type { TurnEvent } from "../../src/runtime/invocations/runtime-events.js";
import { messageText } from "../../src/types/content.js";

vi.setConfig({ testTimeout: 5_000 });

describe("Invocation: turn identity", () => {
  it("gives a client-managed agent's turns no snapshot ID", async () => {
    const { registry } = harness();
    const seen: TurnContext[] = [];
    const agent = register(registry, {
      name: "c",
      turn: async (input, ctx) => {
        seen.push(ctx.turn);
        await replyTurn(input, ctx);
      },
    });
    await agent.runText("x");
    expect(seen.map((t) => [t.snapshotId, t.turnIndex])).toEqual([[undefined, 0]]);
  });

  it("gives turns that start after detach no snapshot ID of their own", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const seen: [string, string | undefined][] = [];
    const agent = register(h.registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        const text = messageText(input.message);
        seen.push([text, ctx.turn.snapshotId]);
        if (text === "first") await gate.at("first", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    connection.sendText("first");
    await gate.reached("first");
    connection.send({ message: { role: "user", content: [{ text: "second" }] }, detach: true });
    await connection.output();
    gate.release("first");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    expect(seen).toEqual([
      ["first", expect.any(String)],
      ["second", undefined],
    ]);
  });

  it("reports a turn's duration as the time the turn took", async () => {
    const events: TurnEvent[] = [];
    const { registry } = harness({ events: { turn: (e) => events.push(e) } });
    const agent = register(registry, {
      name: "a",
      turn: async (input, ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        await replyTurn(input, ctx);
      },
    });
    const before = Date.now();
    await agent.runText("x");
    const elapsed = Date.now() - before;
    expect(events).toHaveLength(1);
    expect(events[0]!.durationMs).toBeGreaterThanOrEqual(15);
    expect(events[0]!.durationMs).toBeLessThanOrEqual(elapsed);
  });
});
