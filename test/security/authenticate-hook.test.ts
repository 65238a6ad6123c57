import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { textInput } from "../harness/wire-chat.js";
import { failure } from "../harness/call-failure.js";

const apiKey =
  (key: string): Interceptor =>
  (next) =>
  (req) => {
    req.header.set("x-api-key", key);
    return next(req);
  };
const clientFor = (server: AgentdProcess, key?: string) =>
  createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl, interceptors: key ? [apiKey(key)] : [] }));

describe("an agents module's authenticate export", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({ args: ["test/fixtures/auth-agents.ts"] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("is the server's authentication: unknown callers get UNAUTHENTICATED", async () => {
    expect((await failure(() => clientFor(server).listAgents({}))).code).toBe(Code.Unauthenticated);
    expect((await failure(() => clientFor(server, "guess").listAgents({}))).code).toBe(Code.Unauthenticated);
    expect(server.listening.auth).toEqual(["module"]);
  });

  it("keeps the code and message of an AgentError it throws", async () => {
    const err = await failure(() => clientFor(server, "revoked-key").listAgents({}));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toBe("this API key was revoked");
  });

  it("gives the agent its principal", async () => {
    const { output } = await clientFor(server, "alice-key-0001").run({
      init: { agent: "whoami" },
      input: textInput("hi"),
    });
    expect(output?.message?.content[0]?.kind.value).toBe("alice@acme said hi");
  });

  it("gives state transforms the principal: a viewer of the same tenant reads the session redacted, an admin in full", async () => {
    const { output } = await clientFor(server, "alice-key-0001").run({
      init: { agent: "whoami" },
      input: textInput("the plan"),
    });
    const asViewer = await clientFor(server, "bob-key-0002").getSnapshot({
      agent: "whoami",
      sessionId: output!.sessionId,
    });
    expect(snapshotTexts(asViewer.snapshot)).toEqual(["[hidden]", "[hidden]"]);
    const asAdmin = await clientFor(server, "alice-key-0001").getSnapshot({
      agent: "whoami",
      sessionId: output!.sessionId,
    });
    expect(snapshotTexts(asAdmin.snapshot)).toEqual(["the plan", "alice@acme said the plan"]);
  });

  it("scopes sessions to the principal's tenant", async () => {
    const { output } = await clientFor(server, "alice-key-0001").run({
      init: { agent: "whoami" },
      input: textInput("acme only"),
    });
    const err = await failure(() =>
      clientFor(server, "carol-key-0003").getSnapshot({ agent: "whoami", sessionId: output!.sessionId }),
    );
    expect(err.code).toBe(Code.NotFound);
  });
});
