import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { snapshotTexts, useAgentd } from "../harness/use-agentd.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";

const agentd = useAgentd({ args: ["test/fixtures/agents.ts"] });

/** Runs `texts` as consecutive turns of one new conversation; returns the session and each turn's snapshot ID. */
async function conversation(agent: string, texts: string[]): Promise<{ sessionId: string; snapshots: string[] }> {
  const chat = new WireChat(agentd.client, { init: { agent } });
  const snapshots: string[] = [];
  for (const text of texts) {
    chat.sendText(text);
    snapshots.push((await chat.nextTurn()).turnEnd.snapshotId);
  }
  const { output } = await chat.finish();
  return { sessionId: output.sessionId, snapshots };
}

describe("snapshots", () => {
  it("GetSnapshot by ID returns that turn's completed state", async () => {
    const { sessionId, snapshots } = await conversation("assistant", ["a", "b"]);
    const { snapshot } = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: snapshots[0] });
    expect(snapshot?.status).toBe(SnapshotStatus.COMPLETED);
    expect(snapshot?.sessionId).toBe(sessionId);
    expect(snapshot?.turnIndex).toBe(0);
    expect(snapshotTexts(snapshot)).toEqual(["a", "echo: a"]);
  });

  it("GetSnapshot by session returns the latest snapshot", async () => {
    const { sessionId, snapshots } = await conversation("assistant", ["a", "b"]);
    const { snapshot } = await agentd.client.getSnapshot({ agent: "assistant", sessionId });
    expect(snapshot?.snapshotId).toBe(snapshots[1]);
    expect(snapshot?.parentId).toBe(snapshots[0]);
    expect(snapshotTexts(snapshot)).toEqual(["a", "echo: a", "b", "echo: b"]);
  });

  it("ListSnapshots pages newest first", async () => {
    const { sessionId, snapshots } = await conversation("assistant", ["1", "2", "3", "4", "5"]);
    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await agentd.client.listSnapshots({ agent: "assistant", sessionId, pageSize: 2, pageToken });
      expect(page.snapshots.length).toBeLessThanOrEqual(2);
      expect(page.snapshots.every((s) => s.state === undefined)).toBe(true);
      seen.push(...page.snapshots.map((s) => s.snapshotId));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(seen).toEqual([...snapshots].reverse());
  });

  it("ListSnapshots includes states on request", async () => {
    const { sessionId } = await conversation("assistant", ["x"]);
    const page = await agentd.client.listSnapshots({ agent: "assistant", sessionId, includeState: true });
    expect(snapshotTexts(page.snapshots[0])).toEqual(["x", "echo: x"]);
  });
});

describe("resume", () => {
  it("by session continues the history in a new connection", async () => {
    const { sessionId, snapshots } = await conversation("assistant", ["first"]);
    const chat = new WireChat(agentd.client, { init: { agent: "assistant", sessionId }, input: textInput("second") });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.turnIndex).toBe(1);
    const { output } = await chat.finish();
    expect(output.sessionId).toBe(sessionId);
    const { snapshot } = await agentd.client.getSnapshot({ agent: "assistant", sessionId });
    expect(snapshot?.parentId).toBe(snapshots[0]);
    expect(snapshotTexts(snapshot)).toEqual(["first", "echo: first", "second", "echo: second"]);
  });

  it("by an earlier snapshot branches and leaves the other branch untouched", async () => {
    const { sessionId, snapshots } = await conversation("assistant", ["root", "main-2"]);
    const before = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: snapshots[1] });
    const { output } = await agentd.client.run({
      init: { agent: "assistant", snapshotId: snapshots[0] },
      input: textInput("branch-2"),
    });
    const branch = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output?.snapshotId });
    expect(branch.snapshot?.parentId).toBe(snapshots[0]);
    expect(branch.snapshot?.sessionId).toBe(sessionId);
    expect(snapshotTexts(branch.snapshot)).toEqual(["root", "echo: root", "branch-2", "echo: branch-2"]);
    const after = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: snapshots[1] });
    expect(after.snapshot).toEqual(before.snapshot);
  });

  it("by an earlier snapshot moves the session's head: resuming by session continues the branch", async () => {
    const { sessionId, snapshots } = await conversation("assistant", ["root", "main-2"]);
    const branch = await agentd.client.run({
      init: { agent: "assistant", snapshotId: snapshots[0] },
      input: textInput("branch-2"),
    });
    const head = await agentd.client.getSnapshot({ agent: "assistant", sessionId });
    expect(head.snapshot?.snapshotId).toBe(branch.output?.snapshotId);
    const { output } = await agentd.client.run({
      init: { agent: "assistant", sessionId },
      input: textInput("branch-3"),
    });
    const next = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output?.snapshotId });
    expect(next.snapshot?.parentId).toBe(branch.output?.snapshotId);
    expect(snapshotTexts(next.snapshot)).toEqual([
      "root",
      "echo: root",
      "branch-2",
      "echo: branch-2",
      "branch-3",
      "echo: branch-3",
    ]);
  });

  it("ListSnapshots refuses a negative page_size with INVALID_ARGUMENT", async () => {
    const { sessionId } = await conversation("assistant", ["one"]);
    const err = await agentd.client
      .listSnapshots({ agent: "assistant", sessionId, pageSize: -1 })
      .catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/page_size must not be negative/);
  });

  it("by snapshot and session asserts the session", async () => {
    const a = await conversation("assistant", ["a"]);
    const b = await conversation("assistant", ["b"]);
    const err = await agentd.client
      .run({ init: { agent: "assistant", snapshotId: a.snapshots[0], sessionId: b.sessionId }, input: textInput("x") })
      .catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
    const ok = await agentd.client.run({
      init: { agent: "assistant", snapshotId: a.snapshots[0], sessionId: a.sessionId },
      input: textInput("x"),
    });
    expect(ok.output?.sessionId).toBe(a.sessionId);
  });
});

describe("failed turns", () => {
  it("resolve in-band as FAILED with the last good snapshot and write nothing", async () => {
    const { sessionId, snapshots } = await conversation("flaky", ["fine"]);
    const chat = new WireChat(agentd.client, { init: { agent: "flaky", sessionId }, input: textInput("please fail") });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.FAILED);
    expect(turn.turnEnd.snapshotId).toBe("");
    const { output } = await chat.drain();
    expect(output.finishReason).toBe(FinishReason.FAILED);
    expect(output.error?.status).toBe("INTERNAL");
    expect(output.error?.message).toBe("flaky agent failed on purpose");
    expect(output.snapshotId).toBe(snapshots[0]);
    const page = await agentd.client.listSnapshots({ agent: "flaky", sessionId });
    expect(page.snapshots.map((s) => s.snapshotId)).toEqual(snapshots);
  });

  it("leave the conversation resumable from the last good turn", async () => {
    const { sessionId } = await conversation("flaky", ["one"]);
    await agentd.client.run({ init: { agent: "flaky", sessionId }, input: textInput("fail now") });
    const chat = new WireChat(agentd.client, { init: { agent: "flaky", sessionId }, input: textInput("two") });
    expect(chunksText((await chat.nextTurn()).chunks)).toBe("echo: two");
    await chat.finish();
    const { snapshot } = await agentd.client.getSnapshot({ agent: "flaky", sessionId });
    expect(snapshotTexts(snapshot)).toEqual(["one", "echo: one", "two", "echo: two"]);
  });
});
