import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import type { AgentConnection } from "../../src/runtime/agents/agent-connection.js";
import { DEFAULT_TURN_SLICE_MS } from "../../src/runtime/sessions/turn-slices.js";
import { userText } from "../../src/types/content.js";
import { harness, register, replyTurn } from "./runtime-fixtures.js";

/** Holds the thread for longer than a turn slice, as a CPU-heavy turn does. */
function spendSlice(): void {
  const until = performance.now() + DEFAULT_TURN_SLICE_MS * 3;
  while (performance.now() < until) {
    // busy: the slice's time is spent
  }
}

/** Reads `connection`'s stream to its end, closing the input side after the first TurnEnd. */
async function closeAfterOneTurn(connection: AgentConnection<unknown>): Promise<void> {
  for await (const chunk of connection.stream) if (chunk.turnEnd) connection.close();
}

describe("an invocation's place in the process's turn line", () => {
  it("waits in its caller's tenant's line: a tenant's burst delays another tenant's turn by one start, not the burst", async () => {
    const { registry } = harness();
    const started: string[] = [];
    const connections = new Map<string, AgentConnection<unknown>>();
    const agent = register(registry, {
      name: "a",
      turn: async (input, ctx) => {
        const name = input.message!.content[0]!.text!;
        started.push(name);
        // The first turn sends the others while it holds the slice: they all find it spent and wait.
        if (name === "a1")
          for (const other of ["a2", "a3", "b1"]) connections.get(other)!.send({ message: userText(other) });
        spendSlice();
        await replyTurn(input, ctx);
      },
    });
    for (const name of ["a1", "a2", "a3", "b1"]) {
      const principal = { subject: name, tenant: name.startsWith("a") ? "tenant-a" : "tenant-b", claims: {} };
      connections.set(name, await agent.connect({}, { principal }));
    }
    connections.get("a1")!.send({ message: userText("a1") });
    await Promise.all([...connections.values()].map(closeAfterOneTurn));
    expect(started).toEqual(["a1", "a2", "b1", "a3"]);
  });
});
