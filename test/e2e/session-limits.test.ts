import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

const MIB = 1024 * 1024;

describe("session size cap (--max-session-bytes, default 64 MiB)", () => {
  let server: AgentdProcess;
  let client: ReturnType<typeof agentServiceClient>;
  beforeAll(async () => {
    server = await startAgentd({ args: ["--store", "memory:", "--max-message-bytes", String(4 * MIB)] });
    client = agentServiceClient(server.baseUrl, "grpc");
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(
    "200 turns of 1 MiB each: turns run until the cap, then fail in-band with RESOURCE_EXHAUSTED, writing nothing, and the server keeps serving",
    { timeout: 240_000 },
    async () => {
      const big = "x".repeat(MIB);
      let sessionId: string | undefined;
      let headBefore = "";
      const finishes: FinishReason[] = [];
      let capError: { status: string; message: string } | undefined;
      for (let turn = 0; turn < 200; turn++) {
        const { output } = await client.run(
          { init: { agent: "assistant", ...(sessionId ? { sessionId } : {}) }, input: textInput(`${turn}:${big}`) },
          { timeoutMs: 60_000 },
        );
        sessionId = output!.sessionId;
        finishes.push(output!.finishReason);
        if (output!.finishReason === FinishReason.FAILED) {
          capError ??= { status: output!.error!.status, message: output!.error!.message };
          expect(output!.snapshotId).toBe(headBefore); // the output points at the last good snapshot
        } else {
          headBefore = output!.snapshotId;
        }
      }
      const ok = finishes.filter((f) => f === FinishReason.STOP).length;
      // Each turn stores ~2 MiB (the message and its echo): the cap is reached after ~32 turns, never before.
      expect(ok).toBeGreaterThanOrEqual(25);
      expect(ok).toBeLessThan(40);
      expect(finishes.slice(0, ok).every((f) => f === FinishReason.STOP)).toBe(true);
      expect(finishes.slice(ok).every((f) => f === FinishReason.FAILED)).toBe(true);
      expect(capError?.status).toBe("RESOURCE_EXHAUSTED");
      expect(capError?.message).toMatch(/max-session-bytes/);
      const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId: sessionId! });
      expect(snapshot?.snapshotId).toBe(headBefore);
      expect(snapshot?.state?.messages).toHaveLength(2 * ok);
      const fresh = await client.run({ init: { agent: "assistant" }, input: textInput("still serving") });
      expect(fresh.output?.finishReason).toBe(FinishReason.STOP);
    },
  );
});

describe("Chat input queue", () => {
  let server: AgentdProcess;
  let client: ReturnType<typeof agentServiceClient>;
  beforeAll(async () => {
    server = await startAgentd({ args: ["--store", "memory:"] });
    client = agentServiceClient(server.baseUrl, "grpc");
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("holds at most 16 inputs ahead of the running turn: the next one ends the Chat with RESOURCE_EXHAUSTED", async () => {
    const slow = (text: string) => textInput(text, { echoDelayMs: 200 });
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: slow("running") });
    for (let i = 0; i < 30; i++) chat.send({ input: slow(`queued ${i}`) });
    const err = await chat.drain().then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.ResourceExhausted);
    expect(err?.rawMessage).toMatch(/inputs are already queued.*limit is 16/);
  });
});
