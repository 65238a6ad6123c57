// The TypeScript client's Chat reconnect keeps an edit of the past (init patches) until a turn
// committed it: a real agentd behind a resetting proxy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, messageText, type AgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { FaultProxy } from "../harness/fault-proxy.js";

let server: AgentdProcess;
let proxy: FaultProxy;
let direct: AgentClient;

beforeAll(async () => {
  server = await startAgentd();
  proxy = new FaultProxy({ target: { host: "127.0.0.1", port: server.port } });
  await proxy.start();
  direct = createAgentClient(server.baseUrl, { protocol: "grpc" });
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe("a Chat that edits the past, reconnected before its first turn committed", () => {
  it("re-sends the init with its patch: the turn runs on the edited history", async () => {
    const first = await direct.run("assistant", "one");
    const client = createAgentClient(`http://127.0.0.1:${proxy.port}`, {
      protocol: "grpc",
      retry: { initialBackoffMs: 10 },
    });
    await client.listAgents(); // an open connection, so the armed fault hits the Chat
    proxy.arm("before-request");
    const conversation = client.chat("assistant", {
      sessionId: first.sessionId!,
      messagesPatch: [{ op: "replace", path: "/0/content", value: [{ text: "ONE" }] }],
    });
    await conversation.send("two");
    const output = await conversation.output();
    expect(client.retryCount).toBeGreaterThanOrEqual(1);
    const snapshot = await direct.getSnapshot("assistant", { snapshotId: output.snapshotId! });
    expect(snapshot.state?.messages.filter((m) => m.role === "user").map(messageText)).toEqual(["ONE", "two"]);
    expect(snapshot.edit?.messagesPatch).toHaveLength(1);
  });
});
