// Detached work that started from an edited past (init messages patch) and is taken over by
// another instance: the takeover runs on the edited history, not on the resumed snapshot's.
import { describe, expect, it, vi } from "vitest";
import { historyOf } from "./runtime-fixtures.js";
import { instances, row, takeOverUntil, type Instance } from "./takeover-fixtures.js";

vi.setConfig({ testTimeout: 8_000 });

describe("takeover of detached work from an edited past", () => {
  it("runs the remaining input on the edited history; the final row is the resumed snapshot's child and notes the edit", async () => {
    const { store, all } = instances(["A", "B"]);
    const [a, b] = all as [Instance, Instance];
    const first = await a.agent.runText("zero");
    const connection = await a.agent.connect({
      sessionId: first.sessionId!,
      messagesPatch: [{ op: "replace", path: "/0/content", value: [{ text: "ZERO" }] }],
    });
    connection.sendText("wait:one");
    await a.gate.reached("one");
    connection.detach();
    const { snapshotId } = await connection.output();
    await a.registry.background.drain(0);
    b.gate.release("one");
    await takeOverUntil(b, store, snapshotId!, "completed");
    await b.registry.background.drain(4_000);
    const final = await row(store, snapshotId!);
    expect(final.parentId).toBe(first.snapshotId);
    expect(final.edit?.messagesPatch).toHaveLength(1);
    const done = await b.agent.getSnapshot({ snapshotId: snapshotId! });
    expect(historyOf(done.state)).toEqual([
      "user:ZERO",
      "model:zero by anonymous on A",
      "user:wait:one",
      "model:wait:one by anonymous on B",
    ]);
  });
});
