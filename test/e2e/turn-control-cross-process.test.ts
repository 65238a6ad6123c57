import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { InputAckResult } from "../../gen/ts/agentd/v1/agent_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { attachToEnd, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// SendInvocationInput reaches detached work running on another process
// through the shared store (issue 41): the input is posted on the pending
// row, and the worker applies it at its next row write (heartbeat, here
// every 200 ms) and writes the ack back.
describe.each(Object.keys(sharedStores))("control inputs across two processes sharing a %s store", (kind) => {
  let shared: SharedStore;
  let a: AgentdProcess;
  let b: AgentdProcess;
  beforeAll(async () => {
    shared = await sharedStores[kind]!();
    const args = ["test/fixtures/agents.ts", "--store", shared.uri, "--heartbeat-interval-ms", "200"];
    [a, b] = await Promise.all([startAgentd({ args }), startAgentd({ args })]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await shared?.stop();
  });

  it("a cancel sent to B stops the running turn of work detached on A, which goes on with its next input", async () => {
    const onA = agentServiceClient(a.baseUrl, "grpc");
    const chat = new WireChat(onA, { init: { agent: "slow" }, input: textInput("slow remote job") as AgentInput });
    await chat.nextChunk();
    chat.send({ input: { ...textInput("after it"), detach: true } as AgentInput });
    const { output } = await chat.drain();
    const { ack } = await agentServiceClient(b.baseUrl, "grpc").sendInvocationInput({
      agent: "slow",
      snapshotId: output.snapshotId,
      input: { cancel: true, requestId: "remote-cancel" } as AgentInput,
    });
    expect(ack).toEqual(expect.objectContaining({ requestId: "remote-cancel", result: InputAckResult.CANCELLED }));
    const attached = await attachToEnd(onA, { agent: "slow", snapshotId: output.snapshotId });
    const ends = attached.chunks.flatMap((c) => (c.turnEnd ? [c.turnEnd.finishReason] : []));
    expect(ends).toEqual([FinishReason.ABORTED, FinishReason.STOP]);
  });
});
