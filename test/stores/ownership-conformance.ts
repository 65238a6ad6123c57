import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import { defineCustomAgent } from "../../src/runtime/agents/custom-agent.js";
import { generateModelTurn } from "../../src/runtime/agents/model-turn.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import type { StoreUnderTest } from "./conformance.js";

/** Two echo agents ("mine", "other") sharing `store` through one registry. */
function agentsOn(store: SessionStore) {
  const registry = new AgentRegistry({ defaultStore: store });
  const define = (name: string) =>
    defineCustomAgent({ name, store: "default", turn: (_input, ctx) => generateModelTurn(ctx, "echo") });
  const mine = define("mine");
  const other = define("other");
  registry.register(mine);
  registry.register(other);
  return { mine, other };
}

/** The status and message a call rejected with (or "ok"). */
async function outcome(call: Promise<unknown>): Promise<{ status: string; message: string } | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    const e = AgentError.from(err);
    return { status: e.status, message: e.message };
  }
}

/**
 * Ownership through the runtime on the store under test: a session belongs
 * to the agent and owner (tenant) that created it, and every read, list,
 * resume, watch and abort by another agent or owner answers exactly what an
 * unknown ID answers (NOT_FOUND, same message shape), never "forbidden".
 */
export function describeOwnership(fresh: () => Promise<StoreUnderTest>): void {
  describe("session ownership (through the runtime)", () => {
    it("another owner's session and snapshots are NOT_FOUND, worded as for an unknown ID", async () => {
      const { store } = await fresh();
      const { mine } = agentsOn(store as SessionStore);
      const owner = { storeContext: { tenant: "tenant-a" } };
      const stranger = { storeContext: { tenant: "tenant-b" } };
      const { sessionId, snapshotId } = await mine.runText("hello", {}, owner);
      expect(await outcome(mine.getSnapshot({ snapshotId: snapshotId! }, owner))).toBe("ok");

      const unknownSnapshot = await outcome(mine.getSnapshot({ snapshotId: "no-such-snapshot" }, stranger));
      const unknownSession = await outcome(mine.getSnapshot({ sessionId: "no-such-session" }, stranger));
      const hidden = (message: string, id: string) => ({ status: "NOT_FOUND", message: message.replace(id, "ID") });
      const asUnknown = (o: Awaited<ReturnType<typeof outcome>>, id: string) =>
        o === "ok" ? o : hidden(o.message, id);
      expect(asUnknown(await outcome(mine.getSnapshot({ snapshotId: snapshotId! }, stranger)), snapshotId!)).toEqual(
        asUnknown(unknownSnapshot, "no-such-snapshot"),
      );
      expect(asUnknown(await outcome(mine.getSnapshot({ sessionId }, stranger)), sessionId)).toEqual(
        asUnknown(unknownSession, "no-such-session"),
      );
      expect(await outcome(mine.listSnapshots(sessionId, {}, stranger))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(mine.runText("steal", { sessionId }, stranger))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(mine.runText("steal", { snapshotId: snapshotId! }, stranger))).toMatchObject({
        status: "NOT_FOUND",
      });
      expect(await outcome(mine.abort(snapshotId!, stranger))).toMatchObject({ status: "NOT_FOUND" });
      const watch = (async () => {
        for await (const _ of mine.watchSnapshot(snapshotId!, new AbortController().signal, stranger)) void _;
      })();
      expect(await outcome(watch)).toMatchObject({ status: "NOT_FOUND" });
      // Nothing the stranger tried reached the session.
      const head = await mine.getSnapshot({ sessionId }, owner);
      expect(head.snapshotId).toBe(snapshotId);
      expect(head.state?.messages).toHaveLength(2);
    });

    it("another agent's session and snapshots are NOT_FOUND, and its resume writes nothing", async () => {
      const { store } = await fresh();
      const { mine, other } = agentsOn(store as SessionStore);
      const { sessionId, snapshotId } = await mine.runText("hello");
      expect(await outcome(other.getSnapshot({ snapshotId: snapshotId! }))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(other.getSnapshot({ sessionId }))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(other.listSnapshots(sessionId))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(other.runText("steal", { sessionId }))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(other.runText("steal", { snapshotId: snapshotId! }))).toMatchObject({ status: "NOT_FOUND" });
      expect(await outcome(other.abort(snapshotId!))).toMatchObject({ status: "NOT_FOUND" });
      expect((await store.getHead(sessionId))?.turnCount).toBe(1);
      expect((await mine.getSnapshot({ sessionId })).snapshotId).toBe(snapshotId);
    });
  });
}
