import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { chunksText, textInput } from "../harness/wire-chat.js";
import { agentServiceClient, type WireProtocol } from "../harness/wire-clients.js";
import type { AgentStreamChunk } from "../../gen/ts/agentd/v1/agent_pb.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

describe.each<WireProtocol>(["grpc", "connect-h2", "connect-h1", "grpc-web-h1"])("over %s", (protocol) => {
  it("Run answers one turn with the output", async () => {
    const client = agentServiceClient(server.baseUrl, protocol);
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("unary") });
    expect(output?.finishReason).toBe(FinishReason.STOP);
    expect(output?.message?.content[0]?.kind).toEqual({ case: "text", value: "echo: unary" });
    expect(output?.snapshotId).not.toBe("");
  });

  it("RunStream streams chunks, the TurnEnd, then the output", async () => {
    const client = agentServiceClient(server.baseUrl, protocol);
    const chunks: AgentStreamChunk[] = [];
    let outputSnapshot = "";
    for await (const res of client.runStream({ init: { agent: "assistant" }, input: textInput("streamed reply") })) {
      if (res.chunk) chunks.push(res.chunk);
      if (res.output) outputSnapshot = res.output.snapshotId;
    }
    expect(chunks.filter((c) => c.modelChunk).length).toBeGreaterThan(1);
    expect(chunksText(chunks)).toBe("echo: streamed reply");
    const turnEnd = chunks.at(-1)?.turnEnd;
    expect(turnEnd?.snapshotId).toBe(outputSnapshot);
  });

  it("ListAgents describes every agent with its state management", async () => {
    const client = agentServiceClient(server.baseUrl, protocol);
    const { agents } = await client.listAgents({});
    const byName = new Map(agents.map((a) => [a.name, a]));
    expect([...byName.keys()]).toEqual(expect.arrayContaining(["assistant", "tasks", "notes", "flaky", "redacted"]));
    expect(byName.get("assistant")?.stateManagement).toBe(1);
    expect(byName.get("notes")?.stateManagement).toBe(2);
    expect(byName.get("tasks")?.abortable).toBe(true);
    expect(byName.get("tasks")?.stateSchema?.["properties"]).toBeDefined();
  });
});

describe("the server under test", () => {
  it("runs on the store this test project selects (memory, or MongoDB in e2e-mongodb)", () => {
    const expected = inject("e2eStoreUri") || "memory:";
    expect(server.listening.store).toBe(expected);
  });
});
