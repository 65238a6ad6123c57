import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { chainFrom } from "../../stores/ledger/state-chain.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";
import { expectAgentError, register, replyTurn } from "./runtime-fixtures.js";

/**
 * A memory store whose reads of records can be made to race a DeleteSession,
 * as a store that reads in more than one step (SQL, MongoDB) can: when
 * `deleteBeforeRecord` names a snapshot, reading it first deletes its
 * session; `deleteMidChain` makes the next `getChain` read its target,
 * delete the session, then read the ancestors (which are gone), as the SQL
 * store's two queries can.
 */
class RacingStore extends InMemorySessionStore {
  deleteBeforeRecord: string | undefined;
  deleteMidChain = false;

  override async getRecord(snapshotId: string): Promise<SnapshotRecord | undefined> {
    if (snapshotId === this.deleteBeforeRecord) {
      this.deleteBeforeRecord = undefined;
      const record = await super.getRecord(snapshotId);
      if (record) await this.deleteSession(record.sessionId);
    }
    return super.getRecord(snapshotId);
  }

  override async getChain(snapshotId: string): Promise<SnapshotRecord[] | undefined> {
    if (!this.deleteMidChain) return super.getChain(snapshotId);
    this.deleteMidChain = false;
    const target = await super.getRecord(snapshotId);
    if (!target) return undefined;
    await this.deleteSession(target.sessionId);
    const ancestors = (await this.listRecords(target.sessionId)).records;
    return chainFrom([target, ...ancestors], snapshotId);
  }
}

function setup() {
  const store = new RacingStore();
  const registry = new AgentRegistry({ defaultStore: store as SessionStore });
  const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
  return { store, agent };
}

describe("a session deleted while a call reads it", () => {
  it("a turn on it fails NOT_FOUND (it was deleted), not DATA_LOSS, when the delete lands between its head and its record", async () => {
    const { store, agent } = setup();
    const first = await agent.runText("one");
    store.deleteBeforeRecord = first.snapshotId;
    await expectAgentError(
      agent.runText("two", { sessionId: first.sessionId }),
      "NOT_FOUND",
      `session "${first.sessionId}" not found`,
    );
    expect(store.deleteBeforeRecord).toBeUndefined(); // the race did happen
  });

  it("reading a snapshot whose chain goes with its session mid-read is NOT_FOUND, not DATA_LOSS", async () => {
    const { store, agent } = setup();
    const first = await agent.runText("one");
    const second = await agent.runText("two", { sessionId: first.sessionId });
    store.deleteMidChain = true;
    await expectAgentError(
      agent.getSnapshot({ snapshotId: second.snapshotId }),
      "NOT_FOUND",
      `snapshot "${second.snapshotId}" not found`,
    );
    expect(store.deleteMidChain).toBe(false);
  });

  it("a chain broken while its session is still there stays DATA_LOSS", async () => {
    const { store, agent } = setup();
    const first = await agent.runText("one");
    const second = await agent.runText("two", { sessionId: first.sessionId });
    // The ancestor checkpoint is lost, the session is not: the store lost data.
    store.getChain = async (snapshotId) => chainFrom([(await store.getRecord(snapshotId))!], snapshotId);
    await expectAgentError(agent.getSnapshot({ snapshotId: second.snapshotId }), "DATA_LOSS", "is missing");
  });

  it("a store fault while the chain is read stays that fault (a retry gets the answer), even if the session is gone by then", async () => {
    const { store, agent } = setup();
    const first = await agent.runText("one");
    const second = await agent.runText("two", { sessionId: first.sessionId });
    store.getChain = async (snapshotId) => {
      const target = await store.getRecord(snapshotId);
      await store.deleteSession(target!.sessionId);
      throw new AgentError("UNAVAILABLE", "the store's connection dropped");
    };
    await expectAgentError(
      agent.getSnapshot({ snapshotId: second.snapshotId }),
      "UNAVAILABLE",
      "the store's connection dropped",
    );
  });
});
