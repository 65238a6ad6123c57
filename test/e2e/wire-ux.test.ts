// What a user hitting the wire by hand (curl, a half-duplex client) sees: explained 415/505
// answers, unknown JSON fields named, Chat over HTTP/1.1 refused with "Chat needs HTTP/2",
// an init-only Chat that creates nothing returning no session ID, ListSnapshots NOT_FOUND.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/agent-client.js";
import { createAgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient, transportFor, type WireProtocol } from "../harness/wire-clients.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd();
});
afterAll(async () => {
  await server?.stop();
});

/** A POST over HTTP/1.1 (fetch), as curl sends it. */
async function post(procedure: string, body: string, contentType?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.baseUrl}/agentd.v1.AgentService/${procedure}`, {
    method: "POST",
    headers: contentType ? { "content-type": contentType } : {},
    body,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

describe("curl-style requests that cannot be served say why", () => {
  it("415 for a unary call without a JSON content type (curl -d without -H) names application/json", async () => {
    const { status, json } = await post("Run", '{"init": {"agent": "assistant"}}', "application/x-www-form-urlencoded");
    expect(status).toBe(415);
    expect(json.code).toBe("invalid_argument");
    expect(json.message).toContain('Content-Type "application/x-www-form-urlencoded"');
    expect(json.message).toContain('"Content-Type: application/json"');
  });

  it("415 for a server-streaming call sent as plain JSON explains the Connect streaming envelope", async () => {
    const { status, json } = await post("RunStream", '{"init": {"agent": "assistant"}}', "application/json");
    expect(status).toBe(415);
    expect(json.message).toMatch(/RunStream is a server-streaming RPC .*application\/connect\+json.*5-byte prefix/);
  });

  it("505 for the bidi Chat over HTTP/1.1 says it needs HTTP/2", async () => {
    const { status, json } = await post("Chat", '{"init": {"agent": "assistant"}}', "application/json");
    expect(status).toBe(505);
    expect(json.code).toBe("unimplemented");
    expect(json.message).toContain("Chat is a bidirectional stream and needs HTTP/2");
  });
});

describe("unknown JSON fields", () => {
  it("are INVALID_ARGUMENT naming the field (Connect JSON over HTTP/1.1)", async () => {
    const { status, json } = await post("Run", '{"init": {"agnet": "assistant"}, "input": {}}', "application/json");
    expect(status).toBe(400);
    expect(json.code).toBe("invalid_argument");
    expect(json.message).toContain('key "agnet" is unknown');
  });

  it("are INVALID_ARGUMENT naming the field at the top level too", async () => {
    const { json } = await post("ListAgents", '{"verbose": true}', "application/json");
    expect(json.code).toBe("invalid_argument");
    expect(json.message).toContain('key "verbose" is unknown');
  });
});

describe("the TypeScript client's Chat over a transport that cannot stream both ways", () => {
  for (const [name, options] of [
    ["grpc-web (HTTP/1.1 by default)", { protocol: "grpc-web" }],
    ["connect over HTTP/1.1", { protocol: "connect", httpVersion: "1.1" }],
  ] as const) {
    it(`${name}: chat() throws "Chat needs HTTP/2" at once`, () => {
      const client = createAgentClient(server.baseUrl, options);
      let error: unknown;
      try {
        client.chat("assistant");
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.Unimplemented);
      expect((error as ConnectError).rawMessage).toMatch(/^Chat needs HTTP\/2 \(gRPC or Connect over HTTP\/2\)/);
    });
  }

  for (const protocol of ["grpc-web-h1", "connect-h1"] as const satisfies WireProtocol[]) {
    it(`a plain ${protocol} transport: the turn rejects saying Chat needs HTTP/2 (not a bare HTTP 505 or EPIPE)`, async () => {
      const conversation = new AgentClient(transportFor(server.baseUrl, protocol)).chat("assistant");
      const err = await Promise.resolve(conversation.send("hi")).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Which one the client sees first depends on timing: the 505 answer or the closed connection.
      expect(ConnectError.from(err).rawMessage).toMatch(
        /^Chat needs HTTP\/2|needs HTTP\/2 \(gRPC or Connect over HTTP\/2\)$/,
      );
      await expect(conversation.output()).rejects.toThrow(/needs HTTP\/2/);
    });
  }

  it("the same client still runs unary and server-streaming calls over HTTP/1.1", async () => {
    const out = await createAgentClient(server.baseUrl, { protocol: "grpc-web" }).run("assistant", "hi");
    expect(out.message?.content[0]).toEqual({ text: "echo: hi" });
  });
});

describe("a Chat with init and no input", () => {
  it("creates no session and returns no session ID", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    const labels = { probe: `init-only-${Date.now()}` };
    const { output } = await new WireChat(client, { init: { agent: "assistant", labels } }).finish();
    expect(output.sessionId).toBe("");
    expect(output.snapshotId).toBe("");
    const { sessions } = await client.listSessions({ labels });
    expect(sessions).toEqual([]);
  });

  it("resuming an existing session without input returns that session", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    const first = await new WireChat(client, { init: { agent: "assistant" }, input: textInput("hello") }).finish();
    const { output } = await new WireChat(client, {
      init: { agent: "assistant", sessionId: first.output.sessionId },
    }).finish();
    expect(output.sessionId).toBe(first.output.sessionId);
  });
});

describe("ListSnapshots on an unknown session", () => {
  for (const protocol of ["grpc", "connect-h1"] as const) {
    it(`is NOT_FOUND like GetSnapshot (${protocol})`, async () => {
      const client = agentServiceClient(server.baseUrl, protocol);
      for (const call of [
        () => client.listSnapshots({ agent: "assistant", sessionId: "no-such-session" }),
        () => client.getSnapshot({ agent: "assistant", sessionId: "no-such-session" }),
      ]) {
        const err = await call().then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
        expect(err?.code).toBe(Code.NotFound);
        expect(err?.rawMessage).toBe('session "no-such-session" not found');
      }
    });
  }
});
