import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { textInput } from "../harness/wire-chat.js";

// The `flood` agent streams N chunks in a synchronous loop that never awaits
// sendModelChunk. With --max-buffered-chunks 64, at most 16 x 64 = 1024
// chunks may wait for the client; past that the call fails RESOURCE_EXHAUSTED
// instead of the server's memory growing with N.
const MAX_BUFFERED = 64;
const UNAWAITED_LIMIT = 16 * MAX_BUFFERED;

describe("an agent that does not await its chunks (--max-buffered-chunks 64)", () => {
  let server: AgentdProcess;
  let client: Client<typeof AgentService>;
  beforeAll(async () => {
    server = await startAgentd({
      args: [
        "test/fixtures/misbehaving-agents.ts",
        "--store",
        "memory:",
        "--max-buffered-chunks",
        String(MAX_BUFFERED),
      ],
    });
    client = createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl }));
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("a Run whose agent streams 16 x --max-buffered-chunks un-awaited chunks at once fails RESOURCE_EXHAUSTED", async () => {
    const err = await failure(() =>
      client.run({ init: { agent: "flood" }, input: textInput(String(UNAWAITED_LIMIT + 1)) }),
    );
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toContain("await responder.sendModelChunk");
  });

  it("a RunStream of such an agent gets at most the limit of chunks, then RESOURCE_EXHAUSTED", async () => {
    let chunks = 0;
    const err = await failure(async () => {
      for await (const res of client.runStream({
        init: { agent: "flood" },
        input: textInput(String(100 * UNAWAITED_LIMIT)),
      }))
        if (res.chunk) chunks++;
    });
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(chunks).toBeLessThanOrEqual(UNAWAITED_LIMIT);
  });

  it("fewer un-awaited chunks than the limit all arrive and the turn completes", async () => {
    const { output } = await client.run({ init: { agent: "flood" }, input: textInput(String(UNAWAITED_LIMIT - 10)) });
    expect(output?.finishReason).toBe(FinishReason.STOP);
    expect(output?.message?.content[0]?.kind).toEqual({ case: "text", value: "done" });
  });
});
