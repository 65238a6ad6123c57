import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createAgentClient, messageText, type AgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

// turn.cancel() and conversation.steer() of the TypeScript client (issue 41),
// against a real agentd serving test/fixtures/agents.ts.
let server: AgentdProcess;
let client: AgentClient;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
  client = createAgentClient(server.baseUrl);
});
afterAll(async () => {
  await server?.stop();
});

/** The texts of the session's head history. */
async function history(agent: string, sessionId: string): Promise<string[]> {
  const snapshot = await client.getSnapshot(agent, { sessionId });
  return (snapshot.state?.messages ?? []).map(messageText);
}

describe("turn.cancel()", () => {
  it("ends the running turn as aborted, and the next turn runs normally", async () => {
    const conversation = client.chat("slow");
    const slow = conversation.send("slow story");
    for await (const _ of slow) break; // the turn streams
    const ack = await slow.cancel();
    const end = await slow; // "aborted", not the "stop" of a turn left to run its course
    expect(ack).toMatchObject({ result: "cancelled", turnIndex: 0 });
    expect(end.finishReason).toBe("aborted");
    expect(await conversation.send("hello").text()).toContain("reply: hello");
    const output = await conversation.output();
    expect(await history("slow", output.sessionId)).toEqual(["hello", "reply: hello"]);
  });

  it("answers nothing_to_cancel for a turn that has ended, without a call", async () => {
    const conversation = client.chat("slow");
    const turn = conversation.send("quick");
    await turn;
    expect(await turn.cancel()).toEqual({ result: "nothing_to_cancel" });
    await conversation.output();
  });

  it("refuses to cancel a turn queued behind the running one (FAILED_PRECONDITION)", async () => {
    const conversation = client.chat("slow");
    const running = conversation.send("slow first");
    const queued = conversation.send("second");
    const err = await queued.cancel().catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.FailedPrecondition);
    await running.cancel();
    expect(await queued.text()).toContain("reply: second");
    await conversation.output();
  });
});

describe("conversation.steer()", () => {
  it("reaches the next model call of a running tool loop", async () => {
    const conversation = client.chat("steerable");
    const turn = conversation.send('call wait {"ms":800}');
    for await (const chunk of turn) if (chunk.modelChunk?.content.some((p) => p.toolRequest)) break;
    const steered = await conversation.steer("mention pears");
    expect(steered.ack).toMatchObject({ result: "steered", turnIndex: 0 });
    expect(steered.turn).toBeUndefined();
    expect(await turn.text()).toContain("scripted: mention pears");
    const output = await conversation.output();
    expect((await history("steerable", output.sessionId)).slice(-2)).toEqual([
      "mention pears",
      "scripted: mention pears",
    ]);
  });

  it("runs a steer sent after the turn ended as the next turn", async () => {
    const conversation = client.chat("steerable");
    await conversation.send("first");
    const steered = await conversation.steer("later");
    expect(steered.ack.result).toBe("queued");
    expect(await steered.turn!.text()).toBe("scripted: later");
    expect((await steered.turn!).turnIndex).toBe(1);
    await conversation.output();
  });
});

describe("client.sendInvocationInput()", () => {
  it("cancels the running turn of detached work", async () => {
    const conversation = client.chat("slow");
    const turn = conversation.send("slow job");
    for await (const _ of turn) break;
    const detached = await conversation.detach();
    const ack = await client.sendInvocationInput("slow", detached.snapshotId!, { cancel: true });
    expect(ack.result).toBe("cancelled");
  });
});
