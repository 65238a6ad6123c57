import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createAgentClient, messageText, type AgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { FaultProxy } from "../harness/fault-proxy.js";

// A control input (issue 41) is sent once and never re-sent by a reconnect:
// a cancel whose connection broke before its ack must not stop the re-sent
// turn (it could stop a later one too).
let server: AgentdProcess;
let proxy: FaultProxy;
let client: AgentClient;
let direct: AgentClient;

beforeAll(async () => {
  server = await startAgentd();
  proxy = new FaultProxy({ target: { host: "127.0.0.1", port: server.port } });
  await proxy.start();
  direct = createAgentClient(server.baseUrl, { protocol: "grpc" });
  client = createAgentClient(`http://127.0.0.1:${proxy.port}`, { protocol: "grpc", retry: { initialBackoffMs: 10 } });
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe("control inputs and reconnects", () => {
  it("does not re-send a cancel cut off with its connection: it rejects UNAVAILABLE and the re-sent turn runs to its end", async () => {
    const conversation = client.chat("assistant");
    const turn = conversation.send({
      message: { role: "user", content: [{ text: "a slow reply to keep" }], metadata: { echoDelayMs: 40 } },
    });
    for await (const chunk of turn) if (chunk.modelChunk) break;
    const cancelled = turn.cancel();
    proxy.resetAll(); // before the cancel's ack can come back
    const err = await cancelled.catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.Unavailable);
    const end = await turn;
    expect(end.finishReason).toBe("stop");
    expect(await turn.text()).toBe("echo: a slow reply to keep");
    const output = await conversation.output();
    const snapshot = await direct.getSnapshot("assistant", { sessionId: output.sessionId });
    expect((snapshot.state?.messages ?? []).map(messageText)).toEqual([
      "a slow reply to keep",
      "echo: a slow reply to keep",
    ]);
  });
});
