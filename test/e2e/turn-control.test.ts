import { describe, expect, it } from "vitest";
import type { AgentInput, AgentStreamChunk } from "../../gen/ts/agentd/v1/agent_pb.js";
import { InputAckResult } from "../../gen/ts/agentd/v1/agent_pb.js";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { snapshotTexts, useAgentd } from "../harness/use-agentd.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";

// Cancel and steer a running turn (issue 41), over the wire against a real
// agentd serving test/fixtures/agents.ts (fixtures: turn-control-agents.ts).
const agentd = useAgentd({ args: ["test/fixtures/agents.ts"] });

const cancel = (requestId = "cancel-1"): AgentInput => ({ cancel: true, requestId }) as AgentInput;
const steer = (text: string, requestId = "steer-1"): AgentInput =>
  ({ ...textInput(text), steer: true, requestId }) as AgentInput;
const acks = (chunks: AgentStreamChunk[]) => chunks.flatMap((c) => (c.inputAck ? [c.inputAck] : []));

/** Reads chunks until one satisfies `predicate`; returns every chunk read. */
async function readUntil(chat: WireChat, predicate: (c: AgentStreamChunk) => boolean): Promise<AgentStreamChunk[]> {
  const chunks: AgentStreamChunk[] = [];
  for (;;) {
    const chunk = await chat.nextChunk();
    chunks.push(chunk);
    if (predicate(chunk)) return chunks;
  }
}

describe("cancel a running turn", () => {
  it("ends a slowly streaming turn as ABORTED, then runs the next input with no trace of the cancelled one", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "slow" }, input: textInput("slow story") as AgentInput });
    await chat.nextChunk(); // the turn streams
    chat.send({ input: cancel() });
    const cancelled = await chat.nextTurn();
    // ABORTED, not the STOP of a turn that streamed its ~2 s to the end: the cancel took, however slowly
    // a loaded machine delivered it.
    expect(cancelled.turnEnd.finishReason).toBe(FinishReason.ABORTED);
    expect(cancelled.turnEnd.snapshotId).toBe("");
    expect(acks(cancelled.chunks)).toEqual([
      expect.objectContaining({ requestId: "cancel-1", result: InputAckResult.CANCELLED, turnIndex: 0 }),
    ]);
    chat.sendText("hello");
    const next = await chat.nextTurn();
    expect(next.turnEnd.finishReason).toBe(FinishReason.STOP);
    expect(chunksText(next.chunks)).toContain("reply: hello");
    const { output } = await chat.finish();
    const { snapshot } = await agentd.client.getSnapshot({ agent: "slow", sessionId: output!.sessionId });
    expect(snapshotTexts(snapshot)).toEqual(["hello", "reply: hello"]);
  });

  it("cancels a turn whose input was sent just before the cancel, even if it had not begun", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "slow-start" },
      input: textInput("slow at once") as AgentInput,
    });
    chat.send({ input: cancel("early-cancel") });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.ABORTED);
    expect(acks(turn.chunks)).toEqual([
      expect.objectContaining({ requestId: "early-cancel", result: InputAckResult.CANCELLED, turnIndex: 0 }),
    ]);
    chat.sendText("then this");
    expect(chunksText((await chat.nextTurn()).chunks)).toBe("reply: then this");
    await chat.finish();
  });

  it("answers NOTHING_TO_CANCEL when no turn runs, and the stream goes on", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "slow" }, input: textInput("one") as AgentInput });
    await chat.nextTurn();
    chat.send({ input: cancel("idle-cancel") });
    const [ack] = await readUntil(chat, (c) => c.inputAck !== undefined);
    expect(ack!.inputAck).toEqual(
      expect.objectContaining({ requestId: "idle-cancel", result: InputAckResult.NOTHING_TO_CANCEL }),
    );
    chat.sendText("two");
    expect(chunksText((await chat.nextTurn()).chunks)).toContain("reply: two");
    await chat.finish();
  });

  it("refuses a cancel that carries a message with INVALID_ARGUMENT", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "slow" } });
    chat.send({ input: { ...textInput("x"), cancel: true } as AgentInput });
    await expect(chat.drain()).rejects.toThrow(/input.cancel carries nothing else/);
  });
});

describe("steer a running turn", () => {
  it("adds a steer sent during a tool round before the next model call", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "steerable" },
      input: textInput('call wait {"ms":800}') as AgentInput,
    });
    await readUntil(chat, (c) => c.modelChunk?.content.some((p) => p.kind.case === "toolRequest") === true);
    chat.send({ input: steer("mention pears") });
    const turn = await chat.nextTurn();
    expect(chunksText(turn.chunks)).toContain("scripted: mention pears");
    expect(acks(turn.chunks)).toEqual([
      expect.objectContaining({ requestId: "steer-1", result: InputAckResult.STEERED, turnIndex: 0 }),
    ]);
    const { output } = await chat.finish();
    const { snapshot } = await agentd.client.getSnapshot({ agent: "steerable", sessionId: output!.sessionId });
    const texts = snapshotTexts(snapshot);
    expect(texts.slice(-2)).toEqual(["mention pears", "scripted: mention pears"]);
    expect(snapshot!.state!.messages.map((m) => m.role)).toEqual([
      Role.USER,
      Role.MODEL,
      Role.TOOL,
      Role.USER,
      Role.MODEL,
    ]);
  });

  it("runs a steer sent after the turn ended as the next turn (QUEUED)", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "steerable" }, input: textInput("first") as AgentInput });
    await chat.nextTurn();
    chat.send({ input: steer("later", "steer-late") });
    const turn = await chat.nextTurn();
    expect(acks(turn.chunks)).toEqual([
      expect.objectContaining({ requestId: "steer-late", result: InputAckResult.QUEUED }),
    ]);
    expect(chunksText(turn.chunks)).toContain("scripted: later");
    expect(turn.turnEnd.turnIndex).toBe(1);
    await chat.finish();
  });

  it("runs a steer the turn never took as the next turn", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "slow" }, input: textInput("slow tale") as AgentInput });
    await chat.nextChunk();
    chat.send({ input: steer("afterwards", "steer-untaken") });
    const first = await chat.nextTurn();
    expect(first.turnEnd.finishReason).toBe(FinishReason.STOP);
    const second = await chat.nextTurn();
    expect(acks([...first.chunks, ...second.chunks])).toEqual([
      expect.objectContaining({ requestId: "steer-untaken", result: InputAckResult.QUEUED }),
    ]);
    expect(chunksText(second.chunks)).toContain("reply: afterwards");
    await chat.finish();
  });

  it("lets a custom agent read a steer from its turn context", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "steer-reader" }, input: textInput("go") as AgentInput });
    chat.send({ input: steer("left turn", "steer-custom") });
    const turn = await chat.nextTurn();
    expect(chunksText(turn.chunks)).toBe("steered by: left turn");
    expect(acks(turn.chunks)).toEqual([expect.objectContaining({ result: InputAckResult.STEERED, turnIndex: 0 })]);
    await chat.finish();
  });
});

describe("control inputs to detached work", () => {
  it("cancels the running turn of detached work through SendInvocationInput", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "slow" }, input: textInput("slow job") as AgentInput });
    await chat.nextChunk();
    chat.send({ input: { detach: true } as AgentInput });
    const { output } = await chat.drain();
    const { ack } = await agentd.client.sendInvocationInput({
      agent: "slow",
      snapshotId: output!.snapshotId,
      input: cancel("detached-cancel"),
    });
    expect(ack).toEqual(expect.objectContaining({ requestId: "detached-cancel", result: InputAckResult.CANCELLED }));
    let ended: SnapshotStatus | undefined;
    for await (const res of agentd.client.watchSnapshot({ agent: "slow", snapshotId: output!.snapshotId })) {
      if (res.status !== SnapshotStatus.PENDING) {
        ended = res.status;
        break;
      }
    }
    const { snapshot } = await agentd.client.getSnapshot({ agent: "slow", snapshotId: output!.snapshotId });
    // The cancelled turn left no trace (a cancel that was ignored would have let it stream its ~2 s
    // reply to the end and commit it): told by the outcome, not by how soon it came.
    expect(ended).toBe(SnapshotStatus.COMPLETED);
    expect(snapshotTexts(snapshot)).toEqual([]);
  });

  it("answers NOT_FOUND for an unknown snapshot", async () => {
    await expect(
      agentd.client.sendInvocationInput({ agent: "slow", snapshotId: "nope", input: cancel() }),
    ).rejects.toThrow(/not found/);
  });
});
