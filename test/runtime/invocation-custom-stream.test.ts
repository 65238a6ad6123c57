// Custom-state patches as the client sees them through a state transform: diffed on the
// transformed state (a change the transform hides streams nothing), and a transform failing
// mid-stream fails the invocation closed even when it would succeed on the final state.
import { describe, expect, it, vi } from "vitest";
import { chunkLabels, drain, expectAgentError, harness, register } from "./runtime-fixtures.js";
import { AgentError } from "../../src/errors/agent-error.js";

vi.setConfig({ testTimeout: 5_000 });

describe("Invocation: custom state through a state transform", () => {
  it("streams nothing for a change the state transform hides", async () => {
    const { registry } = harness();
    const agent = register<{ visible: string; secret: string }>(registry, {
      name: "a",
      store: "default",
      transforms: {
        state: (state) => {
          delete (state.custom as { secret?: string } | undefined)?.secret;
          return state;
        },
      },
      turn: async (_input, ctx) => {
        ctx.session.updateCustom(() => ({ visible: "v", secret: "one" }));
        await ctx.session.flushCustomEvents();
        ctx.session.updateCustom((c) => ({ ...c!, secret: "two" }));
      },
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("x");
    await connection.output();
    expect(chunkLabels((await reading).chunks)).toEqual(["patch:replace:", "turnEnd:0:stop"]);
  });

  it("fails the invocation closed when the state transform throws on an intermediate custom state", async () => {
    const { registry } = harness();
    const agent = register<{ n: number }>(registry, {
      name: "a",
      store: "default",
      transforms: {
        state: (state) => {
          if (state.custom?.n === 1) throw new AgentError("UNAUTHENTICATED", "not for n = 1");
          return state;
        },
      },
      turn: async (_input, ctx) => {
        ctx.session.updateCustom(() => ({ n: 1 }));
        await ctx.session.flushCustomEvents();
        ctx.session.updateCustom(() => ({ n: 2 }));
      },
    });
    const connection = await agent.connect();
    const reading = drain(connection);
    connection.sendText("x");
    await expectAgentError(connection.output(), "UNAUTHENTICATED", /not for n = 1/);
    expect(((await reading).error as AgentError).status).toBe("UNAUTHENTICATED");
  });
});
