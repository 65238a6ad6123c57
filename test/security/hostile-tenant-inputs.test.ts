import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InputAckResult, type AgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput, WireChat } from "../harness/wire-chat.js";

// Issue 48: one tenant's waiting inputs are bounded across all its
// invocations (--tenant-max-waiting-input-bytes), so its 64 invocations
// cannot park 64 × 16 MiB on the heap. Tenant acme parks 3 KB steers on
// several Chats until its budget refuses one; tenant globex's steers and
// turns go on meanwhile; once acme's calls end, its budget is free again.
// Small flag values keep the test cheap: 4 KiB per invocation, 10,000 bytes
// per tenant (three parked steers fit, a fourth does not).

const ACME = "acme-token-0123456789abcdef012345";
const GLOBEX = "globex-token-0123456789abcdef0123";
const STEER = "s".repeat(3000);

let server: AgentdProcess;
let acme: Client<typeof AgentService>;
let globex: Client<typeof AgentService>;

beforeAll(async () => {
  server = await startAgentd({
    args: [
      "test/fixtures/hostile-agents.ts",
      "--auth-tokens",
      writeTokensFile([`${ACME} acme`, `${GLOBEX} globex`]),
      "--max-waiting-input-bytes",
      "4096",
      "--tenant-max-waiting-input-bytes",
      "10000",
    ],
  });
  acme = clientWithToken(server.baseUrl, ACME);
  globex = clientWithToken(server.baseUrl, GLOBEX);
});
afterAll(async () => {
  await server?.stop();
});

/**
 * A "long-turn" Chat of `client` whose 30 s turn runs, with a small input
 * queued behind it and a 3 KB steer sent after that: the steer queues behind
 * the input (acked `queued` at once) and waits, charged to the tenant.
 */
async function parkSteer(client: Client<typeof AgentService>, name: string): Promise<WireChat> {
  const chat = new WireChat(client, { init: { agent: "long-turn" }, input: textInput(`long ${name}`) as AgentInput });
  await chat.nextChunk(); // the turn runs
  chat.sendText(`queued ${name}`);
  chat.send({ input: { ...textInput(STEER), steer: true, requestId: name } as AgentInput });
  const ack = (await chat.nextChunk()).inputAck;
  expect(ack).toMatchObject({ result: InputAckResult.QUEUED, requestId: name });
  return chat;
}

/** Cancels the running long turn and half-closes: the queued input and steer run as turns, then the call ends. */
async function end(chat: WireChat): Promise<void> {
  chat.send({ input: { cancel: true } as AgentInput });
  const { output } = await chat.finish();
  expect(output.finishReason).toBe(FinishReason.STOP);
}

describe("a tenant's waiting-input budget (--tenant-max-waiting-input-bytes)", () => {
  it("refuses the tenant's steer past its budget across its Chats while the other tenant's steers and turns succeed, and frees it once the calls end", async () => {
    const parked = [await parkSteer(acme, "a1"), await parkSteer(acme, "a2"), await parkSteer(acme, "a3")];

    // A fourth Chat's steer would pass acme's 10,000 bytes (each Chat alone holds ~3 KB, under its 4 KiB).
    const over = new WireChat(acme, { init: { agent: "long-turn" }, input: textInput("long a4") as AgentInput });
    await over.nextChunk();
    over.sendText("queued a4");
    over.send({ input: { ...textInput(STEER), steer: true, requestId: "a4" } as AgentInput });
    const refused = await over.drain().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(refused?.code).toBe(Code.ResourceExhausted);
    expect(refused?.rawMessage).toMatch(/limit of 10000 per tenant \(--tenant-max-waiting-input-bytes\)/);

    // globex is unaffected: it parks a steer and runs a turn.
    const globexChat = await parkSteer(globex, "g1");
    const run = await globex.run({ init: { agent: "long-turn" }, input: textInput("quick") });
    expect(run.output?.finishReason).toBe(FinishReason.STOP);

    // acme's parked Chats were not touched by the refusal: they end normally, running their steers.
    for (const chat of parked) await end(chat);
    await end(globexChat);

    // Their bytes are released: acme parks three steers again.
    const again = [await parkSteer(acme, "b1"), await parkSteer(acme, "b2"), await parkSteer(acme, "b3")];
    for (const chat of again) await end(chat);
  });
});
