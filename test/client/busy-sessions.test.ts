import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createAgentClient, type AgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sessionWrittenAt, untilQueued } from "../harness/busy-session.js";
import { agentServiceClient } from "../harness/wire-clients.js";

let server: AgentdProcess;
let client: AgentClient;
beforeAll(async () => {
  server = await startAgentd();
  client = createAgentClient(server.baseUrl, { protocol: "grpc" });
});
afterAll(async () => {
  await server?.stop();
});

/** A conversation holding a fresh session after its first turn, and the session's ID. */
async function holder(): Promise<{ conversation: ReturnType<AgentClient["chat"]>; sessionId: string }> {
  const conversation = client.chat("assistant");
  const end = await conversation.send("held").end;
  return { conversation, sessionId: end.sessionId };
}

describe("the TypeScript client's busy policy (init.busyPolicy)", () => {
  it("reject: run() on a held session rejects with ABORTED naming the running invocation", async () => {
    const { conversation, sessionId } = await holder();
    const err = await client.run("assistant", "second", { sessionId, busyPolicy: "reject" }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: Code.Aborted,
      rawMessage: expect.stringMatching(/is busy: invocation ".+" is running/),
    });
    await conversation.output();
  });

  it("enqueue: run() waits for the conversation to end, then continues after it", async () => {
    const { conversation, sessionId } = await holder();
    const wire = agentServiceClient(server.baseUrl, "grpc");
    const writtenAt = await sessionWrittenAt(wire, sessionId);
    const queued = client.run("assistant", "queued", { sessionId, busyPolicy: "enqueue" });
    await untilQueued(wire, sessionId, writtenAt); // in line while the conversation holds the session
    await conversation.output();
    const output = await queued;
    const snapshot = await client.getSnapshot("assistant", { snapshotId: output.snapshotId! });
    expect(snapshot.state?.messages.map((m) => m.content[0]?.text)).toEqual([
      "held",
      "echo: held",
      "queued",
      "echo: queued",
    ]);
  });

  it("interrupt: run() takes the session and the holder's conversation ends with ABORTED", async () => {
    const { conversation, sessionId } = await holder();
    const output = await client.run("assistant", "took over", { sessionId, busyPolicy: "interrupt" });
    await expect(conversation.output()).rejects.toMatchObject({ code: Code.Aborted });
    const snapshot = await client.getSnapshot("assistant", { sessionId });
    expect(snapshot.snapshotId).toBe(output.snapshotId);
  });
});
