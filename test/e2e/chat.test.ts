import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { applyCustomPatch } from "../../src/streams/custom-patch-stream.js";
import { patchOperationFromWire, valueFromWire } from "../../src/protocol/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient, type WireProtocol } from "../harness/wire-clients.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

describe.each<WireProtocol>(["grpc", "connect-h2"])("Chat over %s", (protocol) => {
  it("runs two turns: chunks, then TurnEnd with a snapshot, then the output", async () => {
    const chat = new WireChat(agentServiceClient(server.baseUrl, protocol), { init: { agent: "assistant" } });
    chat.sendText("hello world");
    const first = await chat.nextTurn();
    expect(first.chunks.filter((c) => c.modelChunk).length).toBeGreaterThan(1);
    expect(chunksText(first.chunks)).toBe("echo: hello world");
    expect(first.turnEnd.turnIndex).toBe(0);
    expect(first.turnEnd.finishReason).toBe(FinishReason.STOP);
    expect(first.turnEnd.snapshotId).not.toBe("");

    chat.sendText("second");
    const second = await chat.nextTurn();
    expect(chunksText(second.chunks)).toBe("echo: second");
    expect(second.turnEnd.turnIndex).toBe(1);
    expect(second.turnEnd.snapshotId).not.toBe(first.turnEnd.snapshotId);

    const { output } = await chat.finish();
    expect(output.snapshotId).toBe(second.turnEnd.snapshotId);
    expect(output.finishReason).toBe(FinishReason.STOP);
    expect(output.sessionId).not.toBe("");
    expect(output.message?.content[0]?.kind).toEqual({ case: "text", value: "echo: second" });
  });

  it("accepts the first input in the same request as init", async () => {
    const chat = new WireChat(agentServiceClient(server.baseUrl, protocol), {
      init: { agent: "assistant" },
      input: textInput("together"),
    });
    const turn = await chat.nextTurn();
    expect(chunksText(turn.chunks)).toBe("echo: together");
    const { output } = await chat.finish();
    expect(output.snapshotId).toBe(turn.turnEnd.snapshotId);
  });
});

describe("Chat custom state", () => {
  it("streams patches that reconstruct the final custom state exactly", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    const chat = new WireChat(client, { init: { agent: "tasks" } });
    let live: unknown = undefined;
    for (const title of ["buy milk", "walk dog", "done 1"]) {
      chat.sendText(title);
      const turn = await chat.nextTurn();
      const patches = turn.chunks.filter((c) => c.customPatch.length > 0);
      expect(patches[0]?.customPatch[0]).toMatchObject({ op: "replace", path: "" });
      for (const c of patches) live = applyCustomPatch(live, c.customPatch.map(patchOperationFromWire));
    }
    const { output } = await chat.finish();
    const snapshot = await client.getSnapshot({ agent: "tasks", snapshotId: output.snapshotId });
    expect(live).toEqual(valueFromWire(snapshot.snapshot?.state?.custom));
    expect(live).toEqual({
      tasks: [
        { id: 1, title: "buy milk", done: true },
        { id: 2, title: "walk dog", done: false },
      ],
      nextId: 3,
    });
  });

  it("records a named artifact and replaces it each turn", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    const chat = new WireChat(client, { init: { agent: "tasks" } });
    chat.sendText("one");
    const t1 = await chat.nextTurn();
    expect(t1.chunks.some((c) => c.artifact?.name === "tasks.md")).toBe(true);
    chat.sendText("two");
    await chat.nextTurn();
    const { output } = await chat.finish();
    expect(output.artifacts.map((a) => a.name)).toEqual(["tasks.md"]);
    expect(output.artifacts[0]?.parts[0]?.kind).toEqual({ case: "text", value: "- [ ] #1 one\n- [ ] #2 two\n" });
  });
});
