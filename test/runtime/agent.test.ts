import { describe, expect, it, vi } from "vitest";
import {
  chunkLabels,
  deferred,
  drain,
  expectAgentError,
  expectThrowsAgentError,
  harness,
  register,
  Rendezvous,
  replyTurn,
  turnEndsOf,
} from "./runtime-fixtures.js";
import { z } from "zod";
import { AgentError } from "../../src/errors/agent-error.js";
import { Agent, isAgent } from "../../src/runtime/agents/agent.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import type { TurnFnContext } from "../../src/runtime/agents/agent-function.js";
import {
  agentFnFromTurns,
  defineCustomAgent,
  type CustomAgentDefinition,
} from "../../src/runtime/agents/custom-agent.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import { EchoModel } from "../../src/models/echo-model.js";
import { ScriptedModel } from "../../src/models/scripted-model.js";
import { messageText } from "../../src/types/content.js";
import { ledgerOnlyStore } from "../fixtures/ledger-only-store.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";

vi.setConfig({ testTimeout: 5_000 });

describe("Agent", () => {
  it("refuses a name that is not letters, digits, '.', '_' or '-' (INVALID_ARGUMENT)", () => {
    for (const name of ["", "-lead", "with space", "slash/y"]) {
      expectThrowsAgentError(() => new Agent({ name }, async () => {}), "INVALID_ARGUMENT", /must be letters, digits/);
    }
    expect(new Agent({ name: "ok.name_1-x" }, async () => {}).name).toBe("ok.name_1-x");
  });

  it("can be bound to one registry only (ALREADY_EXISTS)", () => {
    const agent = defineCustomAgent({ name: "a", turn: replyTurn });
    new AgentRegistry().register(agent);
    expectThrowsAgentError(
      () => new AgentRegistry().register(agent),
      "ALREADY_EXISTS",
      /agent "a" is already registered/,
    );
  });

  it("using the default store needs a registry that has one (FAILED_PRECONDITION)", () => {
    const agent = defineCustomAgent({ name: "a", store: "default", turn: replyTurn });
    expectThrowsAgentError(() => agent.store, "FAILED_PRECONDITION", /register it in an AgentRegistry that has one/);
    expectThrowsAgentError(
      () => new AgentRegistry().register(agent),
      "FAILED_PRECONDITION",
      /uses the default store, but none is configured/,
    );
    const store = new InMemorySessionStore();
    new AgentRegistry({ defaultStore: store }).register(agent);
    expect(agent.store).toBe(store);
  });

  it("uses its own store when given one, and none when client-managed", () => {
    const store = new InMemorySessionStore();
    expect(defineCustomAgent({ name: "a", store, turn: replyTurn }).store).toBe(store);
    expect(defineCustomAgent({ name: "c", turn: replyTurn }).store).toBeUndefined();
  });

  it("describes itself: state management, abortability and the JSON Schema of its state", () => {
    const { registry } = harness();
    const server = register(registry, {
      name: "s",
      description: "server side",
      store: "default",
      stateSchema: z.object({ n: z.number() }),
      turn: replyTurn,
    });
    const client = register(registry, { name: "c", turn: replyTurn });
    const plainStore = ledgerOnlyStore(); // no subscribeStatus: status changes cannot be pushed
    const plain = defineCustomAgent({ name: "p", store: plainStore, turn: replyTurn });
    expect(server.descriptor()).toEqual({
      name: "s",
      description: "server side",
      stateManagement: "server",
      abortable: true,
      stateSchema: expect.objectContaining({ type: "object", properties: { n: { type: "number" } } }),
    });
    expect(client.descriptor()).toEqual({ name: "c", stateManagement: "client", abortable: false, stateSchema: {} });
    expect(plain.descriptor().abortable).toBe(false);
  });

  it("is ready when no start-up check was given, and reports the check's failure otherwise", async () => {
    await expect(new Agent({ name: "a" }, async () => {}).ready()).resolves.toBeUndefined();
    const problem = new Error("prompt does not render");
    await expect(new Agent({ name: "b" }, async () => {}, { ready: Promise.reject(problem) }).ready()).rejects.toBe(
      problem,
    );
  });

  it("takes its liveness settings from the registry", () => {
    const registry = new AgentRegistry({ liveness: { heartbeatTtlMs: 1_234 } });
    const agent = register(registry, { name: "a", turn: replyTurn });
    expect(agent.liveness).toEqual({ heartbeatIntervalMs: 5_000, heartbeatTtlMs: 1_234, chunkRetentionMs: 3_600_000 });
  });

  it("runs one turn with run() and runText(), resolving in-band failures", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        if (messageText(input.message) === "fail") throw new Error("no");
        await replyTurn(input, ctx);
      },
    });
    const ran = await agent.run({ message: { role: "user", content: [{ text: "hi" }] } });
    expect(ran.message).toEqual({ role: "model", content: [{ text: "reply: hi" }] });
    const continued = await agent.runText("fail", { sessionId: ran.sessionId });
    expect(continued).toMatchObject({
      sessionId: ran.sessionId,
      snapshotId: ran.snapshotId,
      finishReason: "failed",
      error: { status: "INTERNAL" },
    });
  });

  it("run() resolves with the agent's in-band failure when the agent fails before reading its input", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      run: async () => {
        throw new AgentError("INVALID_ARGUMENT", "this agent needs a prompt file");
      },
    });
    const output = await agent.runText("hi");
    expect(output).toMatchObject({
      finishReason: "failed",
      error: { status: "INVALID_ARGUMENT", message: "this agent needs a prompt file" },
    });
  });

  it("run() refuses an empty input and leaves the session free for the next call", async () => {
    const { registry } = harness();
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("hi");
    await expectAgentError(agent.run({}, { sessionId: first.sessionId }), "INVALID_ARGUMENT", /input is empty/);
    const next = await agent.runText("again", { sessionId: first.sessionId, busyPolicy: "reject" });
    expect(next.message).toEqual({ role: "model", content: [{ text: "reply: again" }] });
  });

  it("applies the registry's default busy policy to calls that set none", async () => {
    const { registry } = harness({ sessions: { busyPolicy: "interrupt" } });
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        if (messageText(input.message) === "hold") await gate.at("hold", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const first = await agent.runText("x");
    const holder = await agent.connect({ sessionId: first.sessionId });
    holder.sendText("hold");
    await gate.reached("hold");
    const second = await agent.runText("y", { sessionId: first.sessionId });
    expect(second.finishReason).toBe("stop");
    await expectAgentError(holder.output(), "ABORTED");
  });

  it("connect() hands the call's signal to an ENQUEUE wait: aborting it gives up the wait", async () => {
    const { registry } = harness();
    const gate = new Rendezvous();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        if (messageText(input.message) === "hold") await gate.at("hold", ctx.turn.signal);
        await replyTurn(input, ctx);
      },
    });
    const first = await agent.runText("x");
    const holder = await agent.connect({ sessionId: first.sessionId });
    holder.sendText("hold");
    await gate.reached("hold");
    const call = new AbortController();
    const waiting = agent.connect({ sessionId: first.sessionId, busyPolicy: "enqueue" }, { signal: call.signal });
    call.abort(new Error("deadline"));
    await expectAgentError(waiting, "DEADLINE_EXCEEDED");
    gate.release("hold");
    expect((await holder.output()).finishReason).toBe("stop");
  });

  it("leaves no unhandled rejection behind when its start-up check fails and nobody asks", async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      new Agent({ name: "a" }, async () => {}, { ready: Promise.reject(new Error("bad prompt")) });
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
    }
  });

  it("resolves model names through the registry's models", async () => {
    const scripted = new ScriptedModel(() => ({ text: "scripted answer", finishReason: "length" }), "mine");
    const registry = new AgentRegistry({ models: (name) => (name === "mine" ? scripted : new EchoModel()) });
    const agent = register(registry, { name: "a", turn: (_input, ctx) => generateModelTurn(ctx, "mine") });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("q");
    const output = await connection.output();
    expect(chunkLabels((await reading).chunks)).toEqual(["text:scripted ", "text:answer", "turnEnd:0:length"]);
    expect(output.message).toMatchObject({ role: "model", content: [{ text: "scripted answer" }] });
    expect(output.finishReason).toBe("length");
  });

  it("is recognised by isAgent, other values are not", () => {
    expect(isAgent(defineCustomAgent({ name: "a", turn: replyTurn }))).toBe(true);
    expect(isAgent({ __agentdAgent: true })).toBe(true);
    for (const value of [null, undefined, 1, "agent", { __agentdAgent: "yes" }, {}]) expect(isAgent(value)).toBe(false);
  });
});

describe("generateModelTurn", () => {
  it("streams the model's chunks, adds its message to the history and returns its finish reason", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("hello there");
    const output = await connection.output();
    expect(chunkLabels((await reading).chunks)).toEqual(["text:echo: ", "text:hello ", "text:there", "turnEnd:0:stop"]);
    const snapshot = await agent.getSnapshot({ snapshotId: output.snapshotId! });
    expect(snapshot.state!.messages.at(-1)).toEqual({ role: "model", content: [{ text: "echo: hello there" }] });
  });

  it("sends the prelude before the history to the model, without storing it", async () => {
    const seen: string[][] = [];
    const model = new ScriptedModel((request) => {
      seen.push(request.messages.map((m) => `${m.role}:${messageText(m)}`));
      return { text: "ok" };
    });
    const registry = new AgentRegistry({ models: () => model });
    const agent = register(registry, {
      name: "a",
      turn: (_input, ctx) => generateModelTurn(ctx, "any", [{ role: "system", content: [{ text: "be brief" }] }]),
    });
    const output = await agent.runText("q");
    expect(seen).toEqual([["system:be brief", "user:q"]]);
    expect(output.state!.messages.map((m) => m.role)).toEqual(["user", "model"]);
  });
});

describe("defineCustomAgent", () => {
  it("refuses a definition with both run and turn (INVALID_ARGUMENT)", () => {
    const definition = { name: "x", run: async () => {}, turn: replyTurn } as unknown as CustomAgentDefinition<unknown>;
    expectThrowsAgentError(() => defineCustomAgent(definition), "INVALID_ARGUMENT", /either run or turn, not both/);
  });

  it("refuses a definition with neither run nor turn, naming the agent (INVALID_ARGUMENT)", () => {
    const definition = { name: "lonely" } as unknown as CustomAgentDefinition<unknown>;
    expectThrowsAgentError(
      () => defineCustomAgent(definition),
      "INVALID_ARGUMENT",
      /custom agent "lonely" needs a run or turn function/,
    );
  });

  it("with turn: runs it once per input and returns the session's last model message and artifacts", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "t",
      turn: async (input, ctx) => {
        ctx.responder.sendArtifact({ name: "log", parts: [{ text: input.message!.content[0]!.text! }] });
        await replyTurn(input, ctx);
      },
    });
    const connection = await agent.connect();
    connection.sendText("a");
    connection.sendText("b");
    const output = await connection.output();
    expect(output.message).toEqual({ role: "model", content: [{ text: "reply: b" }] });
    expect(output.artifacts).toEqual([{ name: "log", parts: [{ text: "b" }] }]);
  });

  it("with turn: hands the turn the agent context plus the turn's identity and signal", async () => {
    const { registry } = harness();
    const seen: TurnFnContext<unknown>[] = [];
    const agent = register(registry, {
      name: "t",
      store: "default",
      turn: async (_input, ctx) => void seen.push(ctx),
    });
    const output = await agent.runText("x");
    const [ctx] = seen;
    expect(ctx!.turn).toMatchObject({ turnIndex: 0, snapshotId: output.snapshotId });
    expect(ctx!.signal).toBe(ctx!.turn.signal);
    expect(ctx!.principal.subject).toBe("anonymous");
    expect(ctx!.model("echo").name).toBe("echo");
  });

  it("with run: leaves the turn loop to the agent and uses its result", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "r",
      run: async (ctx) => {
        let turns = 0;
        await ctx.session.run(async () => void turns++);
        return { message: { role: "model", content: [{ text: `${turns} turns` }] } };
      },
    });
    const connection = await agent.connect();
    connection.sendText("a");
    connection.sendText("b");
    expect((await connection.output()).message).toEqual({ role: "model", content: [{ text: "2 turns" }] });
  });
});

describe("agentFnFromTurns", () => {
  it("runs no turn before `ready` settles", async () => {
    const { registry } = harness();
    const ready = deferred();
    const ran: string[] = [];
    const agent = register(registry, {
      name: "t",
      run: agentFnFromTurns(async (input, ctx) => {
        ran.push("turn");
        await replyTurn(input, ctx);
      }, ready.promise),
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("x");
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(ran).toEqual([]);
    ready.resolve();
    expect((await connection.output()).message).toEqual({ role: "model", content: [{ text: "reply: x" }] });
    expect(ran).toEqual(["turn"]);
    expect(turnEndsOf((await reading).chunks)).toHaveLength(1);
  });

  it("fails the invocation in-band when `ready` rejects", async () => {
    const { registry } = harness();
    const agent = register(registry, {
      name: "t",
      store: "default",
      run: agentFnFromTurns(replyTurn, Promise.reject(new Error("bad prompt"))),
    });
    const output = await (await agent.connect()).output();
    expect(output).toEqual({
      sessionId: "",
      artifacts: [],
      finishReason: "failed",
      error: { status: "INTERNAL", message: "bad prompt" },
    });
  });
});
