import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { durationMs, type Duration } from "@bufbuild/protobuf/wkt";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { RetryInfoSchema } from "../../src/server/retry-info.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { textInput, WireChat } from "../harness/wire-chat.js";

// The per-tenant rate and invocation limits track each tenant's bucket and
// running invocations: at most --max-tenants at once, idle ones forgotten.
const ACME = "acme-token-0123456789abcdef012345";
const GLOBEX = "globex-token-0123456789abcdef0123";
const INITECH = "initech-token-0123456789abcdef012";
const TOKENS = [`${ACME} acme`, `${GLOBEX} globex`, `${INITECH} initech`];

const run = (server: AgentdProcess, token: string) =>
  clientWithToken(server.baseUrl, token).run({ init: { agent: "assistant" }, input: textInput("hi") });

describe("tenants tracked by the fair-share limits (--max-tenants 2)", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["--store", "memory:", "--auth-tokens", writeTokensFile(TOKENS), "--max-tenants", "2"],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("forgets idle tenants: a third tenant is served once the first two are idle", async () => {
    expect((await run(server, ACME)).output?.finishReason).toBe(FinishReason.STOP);
    expect((await run(server, GLOBEX)).output?.finishReason).toBe(FinishReason.STOP);
    await new Promise((resolve) => setTimeout(resolve, 50)); // their buckets refill (200/s)
    expect((await run(server, INITECH)).output?.finishReason).toBe(FinishReason.STOP);
  });

  it("refuses a new tenant with RESOURCE_EXHAUSTED and retry info while two tenants are busy, and serves it once one is idle", async () => {
    const acme = new WireChat(clientWithToken(server.baseUrl, ACME), { init: { agent: "assistant" } });
    const globex = new WireChat(clientWithToken(server.baseUrl, GLOBEX), { init: { agent: "assistant" } });
    try {
      acme.sendText("holding an invocation");
      globex.sendText("holding an invocation");
      await Promise.all([acme.nextTurn(), globex.nextTurn()]);
      const err = await failure(() => run(server, INITECH));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toContain("limit of busy tenants");
      const [info] = err.findDetails(RetryInfoSchema) as unknown as { retryDelay?: Duration }[];
      expect(durationMs(info!.retryDelay!)).toBe(1000);
      await acme.finish();
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // the retry delay
      expect((await run(server, INITECH)).output?.finishReason).toBe(FinishReason.STOP);
    } finally {
      await globex.finish().catch(() => undefined);
      await acme.finish().catch(() => undefined);
    }
  });
});
