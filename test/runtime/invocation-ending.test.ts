// How an invocation ends: cancel() and the call's signal after the output settled, a second
// cancel, the input side closing when the agent function returns or the invocation is cancelled,
// and nothing reaching the client's transforms once the stream has ended.
import { describe, expect, it, vi } from "vitest";
import {
  drain,
  expectAgentError,
  expectThrowsAgentError,
  harness,
  register,
  Rendezvous,
  replyTurn,
  until,
} from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";
import { messageText } from "../../src/types/content.js";

vi.setConfig({ testTimeout: 5_000 });

describe("Invocation: ending", () => {
  it("keeps refusing input as completed when cancel() comes after the output settled", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "a", turn: replyTurn }).connect();
    connection.sendText("x");
    await connection.output();
    connection.cancel(new AgentError("ABORTED", "too late"));
    expectThrowsAgentError(() => connection.sendText("y"), "FAILED_PRECONDITION", /has completed; read its output/);
  });

  it("keeps the first cancel's error when cancel() is called again", async () => {
    const { registry } = harness();
    const gate = new Rendezvous();
    const connection = await register(registry, {
      name: "a",
      turn: async (input, ctx) => {
        await gate.at("turn", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    }).connect();
    connection.sendText("x");
    await gate.reached("turn");
    const first = new AgentError("UNAVAILABLE", "first");
    connection.cancel(first);
    connection.cancel(new AgentError("ABORTED", "second"));
    await expect(connection.output()).rejects.toBe(first);
    expect(() => connection.sendText("y")).toThrow(first);
  });

  it("frees the session when an idle invocation is cancelled (its input side closes)", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("one");
    const connection = await agent.connect({ sessionId: first.sessionId });
    expect((await store.getHead(first.sessionId))!.lease).toBeDefined();
    const reading = drain(connection);
    connection.cancel(new AgentError("CANCELLED", "gone"));
    expect(((await reading).error as AgentError).message).toBe("gone");
    // Not calling output() (which also closes the input side): the cancel alone ends the work.
    await until(
      async () => (await store.getHead(first.sessionId))!.lease === undefined,
      "the session's release",
      1_000,
    );
  });

  it("refuses input as completed once the agent function has returned on its own", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "a", run: async () => {} }).connect();
    expect(await drain(connection)).toEqual({ chunks: [], error: undefined });
    expectThrowsAgentError(() => connection.sendText("late"), "FAILED_PRECONDITION", /has completed; read its output/);
  });

  it("runs no client transform once the invocation was cancelled, although the agent goes on", async () => {
    const { store, registry } = harness();
    const gate = new Rendezvous();
    const transformed: string[] = [];
    const agent = register<{ n: number }>(registry, {
      name: "a",
      store: "default",
      transforms: {
        chunk: (chunk) => {
          transformed.push(chunk.turnEnd ? `turnEnd:${chunk.turnEnd.finishReason}` : "chunk");
          return chunk;
        },
        state: (state) => {
          transformed.push(`state:${state.custom?.n}`);
          return state;
        },
      },
      turn: async (input, ctx) => {
        if (messageText(input.message) === "one") return replyTurn(input, ctx);
        await gate.at("turn"); // ignores the cancellation on purpose
        ctx.responder.sendModelChunk({ role: "model", content: [{ text: "late" }] });
        ctx.session.updateCustom(() => ({ n: 2 }));
        await ctx.session.flushCustomEvents();
        await replyTurn(input, ctx);
      },
    });
    const first = await agent.runText("one");
    transformed.length = 0;
    const connection = await agent.connect({ sessionId: first.sessionId });
    connection.sendText("two");
    await gate.reached("turn");
    connection.cancel(new AgentError("CANCELLED", "gone"));
    await expectAgentError(connection.output(), "CANCELLED");
    gate.release("turn");
    await until(async () => (await store.getHead(first.sessionId))!.lease === undefined, "the session's release");
    expect(transformed).toEqual([]);
  });
});

describe("Invocation: the call's signal", () => {
  it("still answers detach when the call's signal aborts before the pending row is written", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = register(h.registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at(messageText(input.message), ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const call = new AbortController();
    const connection = await agent.connect({}, { signal: call.signal });
    connection.send({ message: { role: "user", content: [{ text: "a" }] }, detach: true });
    call.abort();
    const output = await connection.output();
    expect(output.finishReason).toBe("detached");
    gate.release("a");
    expect(await h.registry.background.drain(4_000)).toBe(0);
    expect((await h.store.getRecord(output.snapshotId!))!.status).toBe("completed");
  });
});
