import { describe, expect, it, vi } from "vitest";
import {
  chunkLabels,
  deferred,
  drain,
  expectAgentError,
  expectThrowsAgentError,
  harness,
  historyOf,
  recordsOf,
  register,
  Rendezvous,
  replyTurn,
  turnEndsOf,
  type Drained,
} from "./runtime-fixtures.js";
import { z } from "zod";
import { AgentError } from "../../src/errors/agent-error.js";
import type { AgentConnection } from "../../src/runtime/agents/agent-connection.js";
import type { TurnContext } from "../../src/runtime/agents/agent-function.js";
import type { TurnEvent } from "../../src/runtime/invocations/runtime-events.js";
import type { AgentInput, AgentOutput } from "../../src/types/agent-io.js";
import { messageText, userText, type Message } from "../../src/types/content.js";

vi.setConfig({ testTimeout: 5_000 });

const model = (text: string): Message => ({ role: "model", content: [{ text }] });

/** Sends each text as one turn, then reads the stream and the output. */
async function converse<S>(
  connection: AgentConnection<S>,
  ...texts: string[]
): Promise<{ output: AgentOutput<S>; drained: Drained }> {
  const reading = drain(connection as AgentConnection<unknown>);
  for (const text of texts) connection.sendText(text);
  const output = await connection.output();
  return { output, drained: await reading };
}

describe("Invocation: turns and snapshots", () => {
  it("commits a new session's first turn as a completed checkpoint without parent, streaming its TurnEnd", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const connection = await agent.connect();
    const { output, drained } = await converse(connection, "hi");

    const [end] = turnEndsOf(drained.chunks);
    expect(chunkLabels(drained.chunks)).toEqual(["text:reply: hi", "turnEnd:0:stop"]);
    expect(end).toEqual({
      snapshotId: expect.any(String),
      finishReason: "stop",
      turnIndex: 0,
      sessionId: connection.sessionId,
    });
    expect(output).toEqual({
      sessionId: connection.sessionId,
      snapshotId: end!.snapshotId,
      message: model("reply: hi"),
      artifacts: [],
      finishReason: "stop",
    });
    const record = (await store.getRecord(end!.snapshotId!))!;
    expect(record).toMatchObject({
      sessionId: connection.sessionId,
      turnIndex: 0,
      status: "completed",
      finishReason: "stop",
      depth: 0,
    });
    expect(record.parentId).toBeUndefined();
    expect(historyOf(record.checkpoint)).toEqual(["user:hi", "model:reply: hi"]);
    const head = (await store.getHead(connection.sessionId))!;
    expect(head).toMatchObject({ agent: "a", owner: "", headSnapshotId: end!.snapshotId, turnCount: 1 });
    expect(head.lease).toBeUndefined();
  });

  it("commits each later turn as a delta whose parent is the previous turn's snapshot, moving the head", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const connection = await agent.connect();
    const { output, drained } = await converse(connection, "one", "two", "three");

    const ends = turnEndsOf(drained.chunks);
    const ids = ends.map((e) => e.snapshotId!);
    expect(ends.map((e) => e.turnIndex)).toEqual([0, 1, 2]);
    expect(new Set(ids).size).toBe(3);
    const records = await recordsOf(store, connection.sessionId);
    expect(records.map((r) => r.snapshotId)).toEqual(ids);
    expect(records.map((r) => r.parentId)).toEqual([undefined, ids[0], ids[1]]);
    expect(records[2]!.delta).toEqual({ keepMessages: 4, appendMessages: [userText("three"), model("reply: three")] });
    expect(records[2]!.createdAt).toBeGreaterThan(records[1]!.createdAt);
    expect(await store.getHead(connection.sessionId)).toMatchObject({ headSnapshotId: ids[2], turnCount: 3 });
    expect(output.snapshotId).toBe(ids[2]);
    expect(output.message).toEqual(model("reply: three"));
  });

  it("tells each turn its snapshot ID and parent before it runs", async () => {
    const { registry } = harness();
    const seen: TurnContext[] = [];
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        seen.push(ctx.turn);
        await replyTurn(input, ctx);
      },
    });
    const { drained } = await converse(await agent.connect(), "one", "two");
    const ids = turnEndsOf(drained.chunks).map((e) => e.snapshotId);
    expect(seen.map((t) => [t.snapshotId, t.parentId, t.turnIndex])).toEqual([
      [ids[0], undefined, 0],
      [ids[1], ids[0], 1],
    ]);
    expect(seen[0]!.signal.aborted).toBe(false);
  });

  it("resumes by session with the stored history and the next turn index, chaining off the head", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("one");
    const connection = await agent.connect({ sessionId: first.sessionId });
    expect(connection.sessionId).toBe(first.sessionId);
    const { output, drained } = await converse(connection, "two");

    const [end] = turnEndsOf(drained.chunks);
    expect(end).toMatchObject({ turnIndex: 1, sessionId: first.sessionId });
    const record = (await store.getRecord(output.snapshotId!))!;
    expect(record.parentId).toBe(first.snapshotId);
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    expect(historyOf(snapshot.state)).toEqual(["user:one", "model:reply: one", "user:two", "model:reply: two"]);
  });

  it("takes a turn's finish reason from its result, for the TurnEnd, the snapshot and the output", async () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        await replyTurn(input, ctx);
        return { finishReason: "length" };
      },
    });
    const { output, drained } = await converse(await agent.connect(), "hi");
    expect(turnEndsOf(drained.chunks)[0]!.finishReason).toBe("length");
    expect(output.finishReason).toBe("length");
    expect((await store.getRecord(output.snapshotId!))!.finishReason).toBe("length");
  });

  it("streams a turn's chunks and artifacts in the order sent, its custom patch before the TurnEnd", async () => {
    const { registry } = harness();
    const agent = register<{ n: number }>(registry, {
      name: "a",
      store: "default",
      turn: async (_input, ctx) => {
        ctx.responder.sendModelChunk({ role: "model", content: [{ text: "1" }] });
        ctx.responder.sendArtifact({ name: "art", parts: [{ text: "x" }] });
        ctx.responder.sendModelChunk({ role: "model", content: [{ text: "2" }] });
        ctx.session.updateCustom(() => ({ n: 1 }));
      },
    });
    const { drained } = await converse(await agent.connect(), "hi");
    expect(chunkLabels(drained.chunks)).toEqual([
      "text:1",
      "artifact:art",
      "text:2",
      "patch:replace:",
      "turnEnd:0:stop",
    ]);
  });

  it("starts each turn's custom patches with a whole-document replace, then streams incremental diffs", async () => {
    const { registry } = harness();
    const agent = register<{ n: number; tag?: string }>(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        ctx.session.updateCustom((c) => ({ ...c, n: (c?.n ?? 0) + 1 }));
        await ctx.session.flushCustomEvents();
        ctx.session.updateCustom((c) => ({ ...c!, tag: messageText(input.message) }));
        await ctx.session.flushCustomEvents();
        ctx.session.updateCustom((c) => ({ ...c! })); // unchanged: no patch
      },
    });
    const connection = await agent.connect();
    const { drained } = await converse(connection, "a", "b");
    expect(drained.chunks.filter((c) => c.customPatch).map((c) => c.customPatch)).toEqual([
      [{ op: "replace", path: "", value: { n: 1 } }],
      [{ op: "add", path: "/tag", value: "a" }],
      [{ op: "replace", path: "", value: { n: 2, tag: "a" } }],
      [{ op: "replace", path: "/tag", value: "b" }],
    ]);
    expect(connection.custom).toEqual({ n: 2, tag: "b" });
  });

  it("records and streams a copy of an artifact; a same-named one replaces it", async () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        const artifact = { name: "notes", parts: [{ text: messageText(input.message) }] };
        ctx.responder.sendArtifact(artifact);
        artifact.parts[0]!.text = "changed afterwards";
      },
    });
    const { output, drained } = await converse(await agent.connect(), "v1", "v2");
    expect(drained.chunks.flatMap((c) => (c.artifact ? [c.artifact.parts[0]!.text] : []))).toEqual(["v1", "v2"]);
    expect(output.artifacts).toEqual([{ name: "notes", parts: [{ text: "v2" }] }]);
    const [first] = turnEndsOf(drained.chunks);
    expect((await store.getRecord(first!.snapshotId!))!.checkpoint!.artifacts).toEqual([
      { name: "notes", parts: [{ text: "v1" }] },
    ]);
  });

  it("lets a run function's result override the output's message, artifacts and finish reason", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      run: async (ctx) => {
        await ctx.session.run((input, turn) => replyTurn(input, { ...ctx, turn }));
        return { message: model("summary"), artifacts: [{ parts: [{ text: "only" }] }], finishReason: "other" };
      },
    });
    const output = await agent.runText("hi");
    expect(output).toMatchObject({
      message: model("summary"),
      artifacts: [{ parts: [{ text: "only" }] }],
      finishReason: "other",
    });
  });

  it("reports each turn to the turn event listener", async () => {
    const events: TurnEvent[] = [];
    const { registry } = harness({ events: { turn: (e) => events.push(e) } });
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const output = await agent.runText("hi");
    expect(events).toEqual([
      {
        agent: "a",
        sessionId: output.sessionId,
        snapshotId: output.snapshotId,
        turnIndex: 0,
        finishReason: "stop",
        detached: false,
        durationMs: expect.any(Number),
      },
    ]);
    expect(events[0]!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("passes the principal to the agent, and the anonymous one when none is given", async () => {
    const { registry } = harness();
    const tenants: string[] = [];
    const agent = register(registry, {
      name: "a",
      turn: async (input, ctx) => {
        tenants.push(`${ctx.principal.subject}/${ctx.principal.tenant}`);
        await replyTurn(input, ctx);
      },
    });
    await agent.runText("x");
    await agent.runText("x", {}, { principal: { subject: "alice", tenant: "t1", claims: {} } });
    expect(tenants).toEqual(["anonymous/", "alice/t1"]);
  });

  it("makes the sessions it creates the store context's tenant's", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const output = await agent.runText("x", {}, { storeContext: { tenant: "t1" } });
    expect((await store.getHead(output.sessionId))!.owner).toBe("t1");
    await expectAgentError(agent.connect({ sessionId: output.sessionId }), "NOT_FOUND");
  });
});

describe("Invocation: inputs", () => {
  it("refuses an input without message, resume or detach with INVALID_ARGUMENT", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "a", store: "default", turn: replyTurn }).connect();
    expectThrowsAgentError(() => connection.send({}), "INVALID_ARGUMENT", /input is empty/);
    expectThrowsAgentError(
      () => connection.send({ resume: { respond: [], restart: [] } }),
      "INVALID_ARGUMENT",
      /input is empty/,
    );
    connection.sendText("still open");
    expect((await connection.output()).finishReason).toBe("stop");
  });

  it("refuses a message without content parts with INVALID_ARGUMENT", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "a", store: "default", turn: replyTurn }).connect();
    expectThrowsAgentError(
      () => connection.send({ message: { role: "user", content: [] } }),
      "INVALID_ARGUMENT",
      /no content parts/,
    );
  });

  it("refuses input once closed (FAILED_PRECONDITION 'input is closed')", async () => {
    const { registry } = harness();
    const gate = new Rendezvous();
    const connection = await register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at("turn");
        await replyTurn(input, ctx);
      },
    }).connect();
    connection.sendText("one");
    await gate.reached("turn");
    connection.close();
    expectThrowsAgentError(() => connection.sendText("two"), "FAILED_PRECONDITION", /^input is closed$/);
    gate.release("turn");
    await connection.output();
  });

  it("refuses input after the output with FAILED_PRECONDITION telling to read the output", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "a", store: "default", turn: replyTurn }).connect();
    connection.sendText("one");
    await connection.output();
    expectThrowsAgentError(() => connection.sendText("two"), "FAILED_PRECONDITION", /has completed; read its output/);
  });

  it("queues at most maxQueuedInputs inputs behind the running turn: one more is RESOURCE_EXHAUSTED", async () => {
    const { registry } = harness({ sessions: { maxQueuedInputs: 1 } });
    const gate = new Rendezvous();
    const connection = await register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at(messageText(input.message));
        await replyTurn(input, ctx);
      },
    }).connect();
    const reading = drain(connection);
    connection.sendText("one");
    await gate.reached("one");
    connection.sendText("two");
    const error = expectThrowsAgentError(
      () => connection.sendText("three"),
      "RESOURCE_EXHAUSTED",
      /1 inputs are already queued .*the limit is 1/,
    );
    expect(error.details).toEqual({ maxQueuedInputs: 1 });
    gate.release("one");
    gate.release("two");
    const output = await connection.output();
    expect(turnEndsOf((await reading).chunks).map((e) => e.turnIndex)).toEqual([0, 1]);
    expect(output.message).toEqual(model("reply: two"));
  });

  it("hands a resume input to the turn without adding a user message", async () => {
    const { registry } = harness();
    const inputs: AgentInput[] = [];
    let historyLength = -1;
    const agent = register(registry, {
      name: "a",
      turn: async (input, ctx) => {
        inputs.push(input);
        historyLength = ctx.session.messages().length;
      },
    });
    const connection = await agent.connect();
    const respond = [{ toolResponse: { name: "lookup", ref: "call-1", output: 42 } }];
    connection.send({ resume: { respond } });
    await connection.output();
    expect(inputs).toEqual([{ resume: { respond } }]);
    expect(historyLength).toBe(0);
  });

  it("adds the user message with its metadata to the history before the turn runs", async () => {
    const { registry } = harness();
    let seen: readonly Message[] = [];
    const agent = register(registry, { name: "a", turn: async (_input, ctx) => void (seen = ctx.session.messages()) });
    const connection = await agent.connect();
    connection.sendText("hello", { source: "test" });
    await connection.output();
    expect(seen).toEqual([{ role: "user", content: [{ text: "hello" }], metadata: { source: "test" } }]);
  });
});

describe("Invocation: failed turns", () => {
  const failing =
    (fail: (text: string) => unknown) =>
    async (input: AgentInput, ctx: Parameters<typeof replyTurn>[1]): Promise<void> => {
      const text = messageText(input.message);
      ctx.session.addMessages(model(`partial ${text}`));
      if (text.startsWith("fail")) throw fail(text);
      await replyTurn(input, ctx);
    };

  it("ends a throwing turn in-band: failed TurnEnd, no snapshot, output failed at the last good one", async () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: failing(() => new AgentError("UNAVAILABLE", "model down")),
    });
    const connection = await agent.connect();
    const { output, drained } = await converse(connection, "ok", "fail now");

    const ends = turnEndsOf(drained.chunks);
    expect(ends[1]).toEqual({ finishReason: "failed", turnIndex: 1, sessionId: connection.sessionId });
    expect(output).toEqual({
      sessionId: connection.sessionId,
      snapshotId: ends[0]!.snapshotId,
      message: model("reply: ok"),
      artifacts: [],
      finishReason: "failed",
      error: { status: "UNAVAILABLE", message: "model down" },
    });
    expect((await recordsOf(store, connection.sessionId)).map((r) => r.snapshotId)).toEqual([ends[0]!.snapshotId]);
    expect((await store.getHead(connection.sessionId))!.headSnapshotId).toBe(ends[0]!.snapshotId);
  });

  it("ends the invocation at the failed turn: inputs queued behind it never run", async () => {
    const { registry } = harness();
    const ran: string[] = [];
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        ran.push(messageText(input.message));
        return failing(() => new Error("boom"))(input, ctx);
      },
    });
    const { drained } = await converse(await agent.connect(), "fail", "after");
    expect(ran).toEqual(["fail"]);
    expect(turnEndsOf(drained.chunks).map((e) => e.finishReason)).toEqual(["failed"]);
  });

  it("reports a thrown non-AgentError as INTERNAL carrying its message", async () => {
    const { registry } = harness();
    const agent = register(registry, { name: "a", turn: failing(() => new Error("plain")) });
    const output = await agent.runText("fail");
    expect(output.error).toEqual({ status: "INTERNAL", message: "plain" });
  });

  it("creates nothing when the first turn of a new session fails: the output has no session ID", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: failing(() => new Error("boom")) });
    const connection = await agent.connect();
    const { output } = await converse(connection, "fail");
    expect(output.sessionId).toBe("");
    expect(output.snapshotId).toBeUndefined();
    expect(await store.getHead(connection.sessionId)).toBeUndefined();
    expect(store.sizes().records).toBe(0);
  });

  it("rolls the session back to the last good state after a failed turn (history and custom state)", async () => {
    const { registry } = harness();
    let after: { history: string[]; custom: unknown } | undefined;
    const agent = register<{ n: number }>(registry, {
      name: "a",
      store: "default",
      run: async (ctx) => {
        try {
          await ctx.session.run(async (input, turn) => {
            ctx.session.updateCustom((c) => ({ n: (c?.n ?? 0) + 1 }));
            await failing(() => new Error("boom"))(input, { ...ctx, turn });
          });
        } catch {
          after = { history: historyOf({ messages: ctx.session.messages() }), custom: ctx.session.custom() };
        }
      },
    });
    const output = await agent
      .connect()
      .then((c) => converse(c, "ok", "fail"))
      .then((r) => r.output);
    expect(after).toEqual({ history: ["user:ok", "model:partial ok", "model:reply: ok"], custom: { n: 1 } });
    expect(output.finishReason).toBe("stop");
  });

  it("resolves the output as failed when the agent function itself throws outside any turn", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      run: async () => {
        throw new AgentError("FAILED_PRECONDITION", "not configured");
      },
    });
    const output = await (await agent.connect()).output();
    expect(output).toEqual({
      sessionId: "",
      artifacts: [],
      finishReason: "failed",
      error: { status: "FAILED_PRECONDITION", message: "not configured" },
    });
  });
});

describe("Invocation: init without input", () => {
  it("runs no turn and creates nothing on a new session: no session ID, no snapshot, no chunk", async () => {
    const { store, registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const connection = await agent.connect();
    const { output, drained } = await converse(connection);
    expect(output).toEqual({ sessionId: "", artifacts: [], finishReason: "stop" });
    expect(drained).toEqual({ chunks: [], error: undefined });
    expect(store.sizes()).toMatchObject({ heads: 0, records: 0 });
  });

  it("answers with the resumed session, its head snapshot and last model message", async () => {
    const { registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("one");
    const { output } = await converse(await agent.connect({ sessionId: first.sessionId }));
    expect(output).toEqual({
      sessionId: first.sessionId,
      snapshotId: first.snapshotId,
      message: model("reply: one"),
      artifacts: [],
      finishReason: "stop",
    });
  });
});

describe("Invocation: cancellation", () => {
  it("cancels the work when the call's signal aborts mid-turn: no snapshot, stream and output CANCELLED", async () => {
    const { store, registry } = harness();
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        if (messageText(input.message) === "slow")
          await gate.at("slow", ctx.turn.signal).catch((err) => gate.mark(`aborted:${AgentError.from(err).status}`));
        await replyTurn(input, ctx);
      },
    });
    const first = await agent.runText("fast");
    const call = new AbortController();
    const connection = await agent.connect({ sessionId: first.sessionId }, { signal: call.signal });
    const reading = drain(connection);
    connection.sendText("slow");
    await gate.reached("slow");
    call.abort();
    await expectAgentError(connection.output(), "CANCELLED", /the client cancelled the invocation/);
    expect(((await reading).error as AgentError).status).toBe("CANCELLED");
    await gate.reached("aborted:CANCELLED"); // the turn's signal aborted with the same reason
    expectThrowsAgentError(() => connection.sendText("more"), "CANCELLED");
    expect((await store.getHead(first.sessionId))!.headSnapshotId).toBe(first.snapshotId);
  });

  it("fails at once with CANCELLED when the signal is already aborted at connect", async () => {
    const { registry } = harness();
    const agent = register(registry, { name: "a", turn: replyTurn });
    const connection = await agent.connect({}, { signal: AbortSignal.abort() });
    await expectAgentError(connection.output(), "CANCELLED");
  });

  it("ends the invocation with the error given to cancel(), which send() then throws", async () => {
    const { registry } = harness();
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at("turn", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("x");
    await gate.reached("turn");
    const reason = new AgentError("UNAVAILABLE", "shutting down");
    connection.cancel(reason);
    await expect(connection.output()).rejects.toBe(reason);
    expect((await reading).error).toBe(reason);
    expect(() => connection.sendText("y")).toThrow(reason);
  });

  it("ignores cancel() once the output has settled", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "a", turn: replyTurn }).connect();
    connection.sendText("x");
    const output = await connection.output();
    connection.cancel(new AgentError("ABORTED", "too late"));
    await expect(connection.output()).resolves.toBe(output);
  });

  it("ignores the call's signal aborting once the output has settled", async () => {
    const { registry } = harness();
    const call = new AbortController();
    const connection = await register(registry, { name: "a", turn: replyTurn }).connect({}, { signal: call.signal });
    connection.sendText("x");
    const output = await connection.output();
    call.abort();
    await expect(connection.output()).resolves.toBe(output);
    expectThrowsAgentError(() => connection.sendText("y"), "FAILED_PRECONDITION", /has completed/);
  });

  it("does not commit a turn that finishes after its invocation was cancelled", async () => {
    const ended = deferred<TurnEvent>();
    const { store, registry } = harness({ events: { turn: (e) => ended.resolve(e) } });
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        await gate.at("turn"); // ignores the signal on purpose
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    connection.sendText("x");
    await gate.reached("turn");
    connection.cancel(new AgentError("CANCELLED", "gone"));
    gate.release("turn");
    expect((await ended.promise).finishReason).toBe("failed");
    expect(store.sizes()).toMatchObject({ heads: 0, records: 0 });
  });
});

describe("Invocation: busy policy INTERRUPT", () => {
  it("ends the interrupted invocation ABORTED, turn unwritten; the interrupter runs on its last commit", async () => {
    const { store, registry } = harness();
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        const text = messageText(input.message);
        if (text === "slow")
          await gate.at("slow", ctx.turn.signal).catch((err) => gate.mark(`aborted:${AgentError.from(err).status}`));
        await replyTurn(input, ctx);
      },
    });
    const holder = await agent.connect();
    const holderStream = drain(holder);
    holder.sendText("fast");
    holder.sendText("slow");
    await gate.reached("slow");
    const committed = (await store.getHead(holder.sessionId))!.headSnapshotId;

    const interrupter = await agent.connect({ sessionId: holder.sessionId, busyPolicy: "interrupt" });
    await expectAgentError(holder.output(), "ABORTED", /interrupted: invocation ".+" took over session/);
    expect(((await holderStream).error as AgentError).status).toBe("ABORTED");
    await gate.reached("aborted:ABORTED"); // the holder's turn signal aborted
    const { output } = await converse(interrupter, "next");

    const records = await recordsOf(store, holder.sessionId);
    expect(records.map((r) => r.parentId)).toEqual([undefined, committed]);
    expect(historyOf((await agent.getSnapshot({ snapshotId: output.snapshotId! })).state)).toEqual([
      "user:fast",
      "model:reply: fast",
      "user:next",
      "model:reply: next",
    ]);
  });
});

/**
 * Parks the next commit of a turn record once it landed in the store, before
 * its answer reaches the committing invocation: `parked` resolves then, and
 * the answer goes back at `release()`.
 */
function parkLandedTurnCommit(store: ReturnType<typeof harness>["store"]): {
  parked: Promise<void>;
  release(): void;
} {
  const parked = deferred<void>();
  const answer = deferred<void>();
  const commit = store.commit.bind(store);
  const spy = vi.spyOn(store, "commit").mockImplementation(async (request, ctx) => {
    const stored = await commit(request, ctx);
    if (request.record) {
      spy.mockRestore();
      parked.resolve();
      await answer.promise;
    }
    return stored;
  });
  return { parked: parked.promise, release: () => answer.resolve() };
}

/** A session with turn "first", a second invocation on it (the holder), and the holder's next turn commit parked once landed. */
async function holderWithParkedCommit() {
  const { store, registry } = harness();
  const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
  const start = await converse(await agent.connect(), "first");
  const holder = await agent.connect({ sessionId: start.output.sessionId });
  return { store, agent, holder, parked: parkLandedTurnCommit(store) };
}

describe("Invocation: an INTERRUPT racing a commit that landed", () => {
  it("a Run whose only turn committed before the interrupt took the session answers that turn, not ABORTED", async () => {
    const { store, agent, holder, parked } = await holderWithParkedCommit();
    holder.sendText("second");
    const output = holder.output();
    await parked.parked;
    const committed = (await store.getHead(holder.sessionId))!.headSnapshotId;

    const interrupter = await agent.connect({ sessionId: holder.sessionId, busyPolicy: "interrupt" });
    parked.release();
    expect(await output).toMatchObject({
      snapshotId: committed,
      finishReason: "stop",
      message: model("reply: second"),
    });
    const next = await converse(interrupter, "third");
    expect(historyOf((await agent.getSnapshot({ snapshotId: next.output.snapshotId! })).state)).toEqual([
      "user:first",
      "model:reply: first",
      "user:second",
      "model:reply: second",
      "user:third",
      "model:reply: third",
    ]);
  });

  it("a Chat interrupted after its turn's commit landed streams that TurnEnd, then ends ABORTED", async () => {
    const { store, agent, holder, parked } = await holderWithParkedCommit();
    const holderStream = drain(holder);
    holder.sendText("second"); // the input stays open: more turns may come
    await parked.parked;
    const committed = (await store.getHead(holder.sessionId))!.headSnapshotId;

    await agent.connect({ sessionId: holder.sessionId, busyPolicy: "interrupt" });
    parked.release();
    const drained = await holderStream;
    expect((drained.error as AgentError).status).toBe("ABORTED");
    expect(turnEndsOf(drained.chunks).map((end) => end.snapshotId)).toEqual([committed]);
    await expectAgentError(holder.output(), "ABORTED", /interrupted: invocation ".+" took over session/);
  });
});

describe("Invocation: client-managed agents", () => {
  const schema = z.object({ notes: z.array(z.string()) });

  it("continues from init's state: history, custom state, turn index counting its user messages", async () => {
    const { registry } = harness();
    const agent = register<{ notes: string[] }>(registry, {
      name: "notes",
      stateSchema: schema,
      turn: async (input, ctx) => {
        ctx.session.updateCustom((c) => ({ notes: [...(c?.notes ?? []), messageText(input.message)] }));
        await replyTurn(input, ctx);
      },
    });
    const state = {
      sessionId: "client-1",
      messages: [userText("a"), model("reply: a")],
      artifacts: [],
      custom: { notes: ["a"] },
    };
    const connection = await agent.connect({ state });
    const { output, drained } = await converse(connection, "b");
    expect(connection.sessionId).toBe("client-1");
    expect(turnEndsOf(drained.chunks)).toEqual([{ finishReason: "stop", turnIndex: 1, sessionId: "client-1" }]);
    expect(output).toEqual({
      sessionId: "client-1",
      message: model("reply: b"),
      artifacts: [],
      state: {
        sessionId: "client-1",
        messages: [userText("a"), model("reply: a"), userText("b"), model("reply: b")],
        artifacts: [],
        custom: { notes: ["a", "b"] },
      },
      finishReason: "stop",
    });
  });

  it("gives a new client-managed conversation a session ID of its own and returns it with the state", async () => {
    const { registry } = harness();
    const agent = register(registry, { name: "c", turn: replyTurn });
    const connection = await agent.connect();
    const { output } = await converse(connection, "x");
    expect(connection.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(output.sessionId).toBe(connection.sessionId);
    expect(output.state!.sessionId).toBe(connection.sessionId);
  });

  it("refuses detach with FAILED_PRECONDITION: it needs a server-side store", async () => {
    const { registry } = harness();
    const connection = await register(registry, { name: "c", turn: replyTurn }).connect();
    expectThrowsAgentError(
      () => connection.detach(),
      "FAILED_PRECONDITION",
      /client-managed: detach needs a server-side store/,
    );
  });
});

describe("Invocation: client transforms", () => {
  it("streams chunks through the chunk transform (rewritten or dropped); the snapshot keeps the raw text", async () => {
    const { store, registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      transforms: {
        chunk: (chunk, ctx) => {
          const text = chunk.modelChunk?.content[0]?.text;
          if (text === "drop") return null;
          const who = `${ctx.agent}/${ctx.principal?.subject}/${ctx.headers?.get("x-h")}`;
          if (text !== undefined) chunk.modelChunk!.content[0]!.text = `${who}:${text.toUpperCase()}`;
          return chunk;
        },
      },
      turn: async (_input, ctx) => {
        for (const text of ["keep", "drop", "also"])
          ctx.responder.sendModelChunk({ role: "model", content: [{ text }] });
        ctx.session.addMessages(model("keep drop also"));
      },
    });
    const principal = { subject: "bob", tenant: "", claims: {} };
    const connection = await agent.connect({}, { principal, headers: new Headers({ "x-h": "v" }) });
    const { output, drained } = await converse(connection, "x");
    expect(chunkLabels(drained.chunks)).toEqual(["text:a/bob/v:KEEP", "text:a/bob/v:ALSO", "turnEnd:0:stop"]);
    expect((await store.getRecord(output.snapshotId!))!.checkpoint!.messages.at(-1)).toEqual(model("keep drop also"));
  });

  it("fails the invocation closed with the chunk transform's error", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      transforms: {
        chunk: () => {
          throw new Error("no chunks today");
        },
      },
      turn: replyTurn,
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("x");
    const error = await expectAgentError(
      connection.output(),
      "PERMISSION_DENIED",
      /^chunk transform failed: no chunks today$/,
    );
    const drained = await reading;
    expect(drained.error).toBe(error);
    expect(drained.chunks).toEqual([]);
  });

  it("diffs custom patches on the state-transformed state, so the client never sees what it removes", async () => {
    const { registry } = harness();
    const agent = register<{ visible: string; secret?: string }>(registry, {
      name: "a",
      store: "default",
      transforms: {
        state: (state) => {
          delete state.custom!.secret;
          return state;
        },
      },
      turn: async (input, ctx) => {
        ctx.session.updateCustom(() => ({ visible: messageText(input.message), secret: "s3cret" }));
      },
    });
    const connection = await agent.connect();
    const { drained } = await converse(connection, "hi");
    expect(drained.chunks.filter((c) => c.customPatch).map((c) => c.customPatch)).toEqual([
      [{ op: "replace", path: "", value: { visible: "hi" } }],
    ]);
    expect(connection.custom).toEqual({ visible: "hi" });
  });

  it("fails the invocation closed when the state transform throws while streaming custom state", async () => {
    const { registry } = harness();
    const agent = register<{ n: number }>(registry, {
      name: "a",
      store: "default",
      transforms: {
        state: () => {
          throw new AgentError("UNAUTHENTICATED", "who are you");
        },
      },
      turn: async (_input, ctx) => ctx.session.updateCustom(() => ({ n: 1 })),
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("x");
    await expectAgentError(connection.output(), "UNAUTHENTICATED", /who are you/);
    expect(((await reading).error as AgentError).status).toBe("UNAUTHENTICATED");
  });

  it("shapes a client-managed output's state and message with the state transform; null omits both", async () => {
    const { registry } = harness();
    const seen: (string | undefined)[] = [];
    const redacting = register(registry, {
      name: "r",
      transforms: {
        state: (state, ctx) => {
          seen.push(ctx.headers?.get("x-who") ?? undefined);
          return { ...state, messages: state.messages.filter((m) => m.role === "user") };
        },
      },
      turn: replyTurn,
    });
    const hiding = register(registry, { name: "h", transforms: { state: () => null }, turn: replyTurn });
    const redacted = await redacting.runText("x", {}, { headers: new Headers({ "x-who": "me" }) });
    expect(redacted.state!.messages).toEqual([userText("x")]);
    expect(redacted.message).toBeUndefined(); // the transform removed the model's messages
    expect(seen).toEqual(["me"]);
    const hidden = await hiding.runText("x");
    expect(hidden.state).toBeUndefined();
    expect(hidden.message).toBeUndefined();
  });

  it("fails a client-managed invocation closed when the state transform throws on its output", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "r",
      transforms: {
        state: () => {
          throw new Error("nope");
        },
      },
      turn: replyTurn,
    });
    const connection = await agent.connect();
    connection.sendText("x");
    await expectAgentError(connection.output(), "PERMISSION_DENIED", /^state transform failed: nope$/);
  });
});
