import { describe, expect, it, vi } from "vitest";
import { expectAgentError, historyOf } from "./runtime-fixtures.js";
import { z } from "zod";
import type { TurnContext } from "../../src/runtime/agents/agent-function.js";
import { SessionRunner, type TurnLifecycle } from "../../src/runtime/sessions/session-runner.js";
import type { AgentInput } from "../../src/types/agent-io.js";
import { userText, type Message } from "../../src/types/content.js";
import type { FinishReason } from "../../src/types/snapshot.js";
import { AsyncChannel } from "../../src/streams/async-channel.js";
import { TurnSlices } from "../../src/runtime/sessions/turn-slices.js";

vi.setConfig({ testTimeout: 5_000 });

const model = (text: string): Message => ({ role: "model", content: [{ text }] });

/** A lifecycle that records every call as a string, over a fixed list of inputs. */
function recordingLifecycle(
  inputs: AgentInput[],
  onEnd?: (turn: TurnContext) => Promise<void>,
): { lifecycle: TurnLifecycle; calls: string[] } {
  const calls: string[] = [];
  const channel = new AsyncChannel<AgentInput>();
  for (const input of inputs) channel.push(input);
  channel.close();
  const signal = new AbortController().signal;
  const lifecycle: TurnLifecycle = {
    inputs: channel,
    beginTurn: (turnIndex) => {
      calls.push(`begin:${turnIndex}`);
      return { snapshotId: `s${turnIndex}`, turnIndex, signal };
    },
    endTurn: async (turn, finishReason: FinishReason) => {
      calls.push(`end:${turn.turnIndex}:${finishReason}`);
      await onEnd?.(turn);
    },
    failTurn: async (turn) => {
      calls.push(`fail:${turn.turnIndex}`);
    },
  };
  return { lifecycle, calls };
}

const emptyState = () => ({ sessionId: "s", messages: [], artifacts: [] });

describe("SessionRunner.run", () => {
  it("calls the turn function once per input, in order, with the input's message already in the history", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }, { message: userText("b") }]);
    const runner = new SessionRunner(emptyState(), undefined, 0, lifecycle);
    await runner.run(async (input, turn) => {
      calls.push(`turn:${turn.turnIndex}:${turn.snapshotId}:${historyOf({ messages: runner.messages() }).join("|")}`);
      runner.addMessages(model(`re ${input.message!.content[0]!.text}`));
    });
    expect(calls).toEqual([
      "begin:0",
      "turn:0:s0:user:a",
      "end:0:stop",
      "begin:1",
      "turn:1:s1:user:a|model:re a|user:b",
      "end:1:stop",
    ]);
    expect(runner.turnIndex).toBe(2);
  });

  it("begins a turn only once the process's turn slices admit it", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }, { message: userText("b") }]);
    const later: (() => void)[] = [];
    // A clock that stands still and a slice of 0 ms: one turn per turn of the (hand-turned) event loop.
    const slices = new TurnSlices(0, { now: () => 0, later: (fn) => later.push(fn) });
    const run = new SessionRunner(emptyState(), undefined, 0, lifecycle, slices).run(async () => {});
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(["begin:0", "end:0:stop"]);
    expect(slices.queued).toBe(1);
    for (const fn of later.splice(0)) fn();
    await run;
    expect(calls).toEqual(["begin:0", "end:0:stop", "begin:1", "end:1:stop"]);
  });

  it("numbers turns from the first turn index it was given", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }]);
    const runner = new SessionRunner(emptyState(), undefined, 7, lifecycle);
    await runner.run(async () => {});
    expect(calls).toEqual(["begin:7", "end:7:stop"]);
    expect(runner.turnIndex).toBe(8);
  });

  it("ends a turn with the finish reason its function returns", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }]);
    await new SessionRunner(emptyState(), undefined, 0, lifecycle).run(async () => ({ finishReason: "interrupted" }));
    expect(calls).toEqual(["begin:0", "end:0:interrupted"]);
  });

  it("adds nothing to the history for an input without a message (a resume)", async () => {
    const { lifecycle } = recordingLifecycle([{ resume: { respond: [{ toolResponse: { name: "t", output: 1 } }] } }]);
    const runner = new SessionRunner(emptyState(), undefined, 0, lifecycle);
    let length = -1;
    await runner.run(async () => void (length = runner.messages().length));
    expect(length).toBe(0);
  });

  it("fails a throwing turn through failTurn, runs no later input, and rethrows the error", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }, { message: userText("b") }]);
    const runner = new SessionRunner(emptyState(), undefined, 0, lifecycle);
    const boom = new Error("boom");
    await expect(
      runner.run(async () => {
        calls.push("turn");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(calls).toEqual(["begin:0", "turn", "fail:0"]);
    expect(runner.turnIndex).toBe(0);
  });

  it("fails the turn when ending it fails (a refused commit), and rethrows that error", async () => {
    const refused = new Error("commit refused");
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }], async () => {
      throw refused;
    });
    await expect(new SessionRunner(emptyState(), undefined, 0, lifecycle).run(async () => {})).rejects.toBe(refused);
    expect(calls).toEqual(["begin:0", "end:0:stop", "fail:0"]);
  });

  it("waits for pending custom-state notifications before ending the turn", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }]);
    const runner = new SessionRunner<{ n: number }>(emptyState(), undefined, 0, lifecycle);
    runner.onCustomChange(async () => {
      await Promise.resolve();
      calls.push("custom notified");
    });
    await runner.run(async () => runner.updateCustom(() => ({ n: 1 })));
    expect(calls).toEqual(["begin:0", "custom notified", "end:0:stop"]);
  });

  it("fails the turn when an update breaks the state schema (INVALID_ARGUMENT naming the field)", async () => {
    const { lifecycle, calls } = recordingLifecycle([{ message: userText("a") }]);
    const runner = new SessionRunner<{ n: number }>(emptyState(), z.object({ n: z.number() }), 0, lifecycle);
    await expectAgentError(
      runner.run(async () => runner.updateCustom(() => ({ n: "one" }) as never)),
      "INVALID_ARGUMENT",
      /custom state: .*n/,
    );
    expect(calls).toEqual(["begin:0", "fail:0"]);
  });
});

describe("SessionRunner.result", () => {
  it("is the last model message and every artifact", () => {
    const { lifecycle } = recordingLifecycle([]);
    const runner = new SessionRunner(
      {
        messages: [userText("q"), model("first"), model("last"), userText("after")],
        artifacts: [{ name: "a", parts: [{ text: "1" }] }],
      },
      undefined,
      0,
      lifecycle,
    );
    expect(runner.result()).toEqual({ message: model("last"), artifacts: [{ name: "a", parts: [{ text: "1" }] }] });
  });

  it("has no message when the history holds no model message", () => {
    const { lifecycle } = recordingLifecycle([]);
    const result = new SessionRunner({ messages: [userText("q")], artifacts: [] }, undefined, 0, lifecycle).result();
    expect(result).toEqual({ artifacts: [] });
    expect("message" in result).toBe(false);
  });
});
