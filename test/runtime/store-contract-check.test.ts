/**
 * A store that does not implement the SessionStore contract (one written for
 * an earlier contract, say) is refused where it is configured, naming what it
 * lacks, instead of failing at the first turn with "commit is not a function".
 */
import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { defineCustomAgent } from "../../src/runtime/agents/custom-agent.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";

/** The round-1 store shape: one full-state row per snapshot, no session heads. */
const earlierContractStore = {
  async getSnapshot() {
    return undefined;
  },
  async saveSnapshot() {},
} as unknown as SessionStore;

function defineWith(store: SessionStore) {
  return defineCustomAgent({ name: "notes", store, turn: (_input, ctx) => generateModelTurn(ctx, "echo") });
}

function thrown(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error("expected an AgentError");
}

describe("the store contract check", () => {
  it("refuses an agent whose store lacks the contract's methods, naming each one", () => {
    const err = thrown(() => defineWith(earlierContractStore));
    expect(err.status).toBe("INVALID_ARGUMENT");
    expect(err.message).toContain('agent "notes"');
    expect(err.message).toContain(
      "missing getHead(), commit(), getRecord(), getChain(), listRecords(), updateRecord()",
    );
    expect(err.details).toEqual({
      missing: ["getHead", "commit", "getRecord", "getChain", "listRecords", "updateRecord"],
    });
  });

  it("names only the one method a nearly complete store lacks", () => {
    const store = new InMemorySessionStore();
    const partial = Object.assign(Object.create(store) as object, { commit: undefined }) as unknown as SessionStore;
    const err = thrown(() => defineWith(partial));
    expect(err.message).toContain("missing commit() (");
    expect(err.details).toEqual({ missing: ["commit"] });
  });

  it("refuses a registry's default store that lacks them", () => {
    const err = thrown(() => new AgentRegistry({ defaultStore: earlierContractStore }));
    expect(err.status).toBe("INVALID_ARGUMENT");
    expect(err.message).toContain("the registry's default store");
  });

  it("refuses a store that is not an object", () => {
    const err = thrown(() => defineWith("file:./data" as unknown as SessionStore));
    expect(err.status).toBe("INVALID_ARGUMENT");
    expect(err.message).toContain("must be a SessionStore object, got string");
  });

  it("accepts the shipped stores and the default-store marker", () => {
    expect(() => defineWith(new InMemorySessionStore())).not.toThrow();
    expect(() => new AgentRegistry({ defaultStore: new InMemorySessionStore() })).not.toThrow();
    expect(() =>
      defineCustomAgent({ name: "d", store: "default", turn: (_input, ctx) => generateModelTurn(ctx, "echo") }),
    ).not.toThrow();
  });
});
