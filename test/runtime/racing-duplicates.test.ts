import { describe, expect, it } from "vitest";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { userText } from "../../src/types/content.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { register, replyTurn, until } from "./runtime-fixtures.js";

// Two calls with the same request ID that both start a new session in one process: the session ID
// is derived from the request ID, so they race for one session. One runs the turn; the other waits
// for it and is answered from the ledger — whatever the order in which their reads of the (still
// missing) head resolve. On MongoDB two such reads often resolve in one tick.

/** A memory store whose head reads wait at a gate until `open()`, then resolve together. */
function gatedStore(): { store: SessionStore; reads: () => number; open: () => void } {
  const memory = new InMemorySessionStore();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let gated = true;
  let reads = 0;
  const store = new Proxy(memory, {
    get(target, key, receiver) {
      if (key === "getHead") {
        return async (...args: Parameters<SessionStore["getHead"]>) => {
          if (gated) {
            reads++;
            await gate;
          }
          return target.getHead(...args);
        };
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as SessionStore;
  return {
    store,
    reads: () => reads,
    open: () => {
      gated = false;
      release();
    },
  };
}

describe("racing duplicates of a new session's first call (one process)", () => {
  it("make one session with one turn when both find no session in the same tick; both get that turn", async () => {
    const { store, reads, open } = gatedStore();
    const registry = new AgentRegistry({ defaultStore: store });
    let turns = 0;
    const agent = register(registry, {
      name: "a",
      store: "default",
      turn: async (input, ctx) => {
        turns++;
        await replyTurn(input, ctx);
      },
    });
    const send = () => agent.run({ message: userText("hello"), requestId: "r-race" });
    const both = Promise.all([send(), send()]);
    await until(() => reads() === 2, "both calls reading the new session's head");
    open();
    const [a, b] = await both;
    expect(turns).toBe(1);
    expect(b.sessionId).toBe(a.sessionId);
    expect(b.snapshotId).toBe(a.snapshotId);
    expect((await store.getHead(a.sessionId))?.turnCount).toBe(1);
  });
});
