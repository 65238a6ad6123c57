// The TypeScript client's HTTP/2 keepalive against a real agentd behind a proxy that freezes its
// connections (nothing forwarded either way, no FIN, no RST: the server's host vanished).
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, DEFAULT_CLIENT_KEEPALIVE, messageText } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { FaultProxy } from "../harness/fault-proxy.js";

let server: AgentdProcess;
let proxy: FaultProxy;

beforeAll(async () => {
  server = await startAgentd();
  proxy = new FaultProxy({ target: { host: "127.0.0.1", port: server.port } });
  await proxy.start();
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe("HTTP/2 keepalive of the TypeScript client", () => {
  it("fails a Chat UNAVAILABLE once its connection stops answering PINGs, instead of waiting forever", async () => {
    const client = createAgentClient(`http://127.0.0.1:${proxy.port}`, {
      protocol: "grpc",
      retry: false,
      keepaliveIntervalMs: 200,
      keepaliveTimeoutMs: 3_000,
    });
    const conversation = client.chat("assistant");
    expect(await conversation.send("before the server vanished").text()).toBe("echo: before the server vanished");
    proxy.freezeAll();
    const lost = conversation.send("after");
    const error = await failure(() => lost.text());
    expect(error.code).toBe(Code.Unavailable);
    await failure(() => conversation.output());
  });

  it("lets a conversation whose connection silently died go on: the client reconnects and the next turn completes", async () => {
    // The server PINGs too (short settings), so it ends the Chat of the dead connection and frees the session.
    const pinging = await startAgentd({ args: ["--keepalive-interval-ms", "200", "--keepalive-timeout-ms", "3000"] });
    const freezing = new FaultProxy({ target: { host: "127.0.0.1", port: pinging.port } });
    await freezing.start();
    try {
      const client = createAgentClient(`http://127.0.0.1:${freezing.port}`, {
        protocol: "grpc",
        keepaliveIntervalMs: 200,
        keepaliveTimeoutMs: 3_000,
        retry: { initialBackoffMs: 10 },
      });
      const conversation = client.chat("assistant");
      expect(await conversation.send("one").text()).toBe("echo: one");
      freezing.freezeAll();
      expect(await conversation.send("two").text()).toBe("echo: two");
      const output = await conversation.output();
      expect(client.retryCount).toBeGreaterThanOrEqual(1);
      const snapshot = await client.getSnapshot("assistant", { snapshotId: output.snapshotId! });
      expect(snapshot.state?.messages.filter((m) => m.role === "user").map(messageText)).toEqual(["one", "two"]);
    } finally {
      await freezing.close();
      await pinging.stop();
    }
  });

  it("PINGs after 30 s without a frame and gives up on a PING unanswered for 20 s, by default", () => {
    expect(DEFAULT_CLIENT_KEEPALIVE).toEqual({ intervalMs: 30_000, timeoutMs: 20_000 });
  });

  it.each([
    ["keepaliveIntervalMs", 0],
    ["keepaliveIntervalMs", -5],
    ["keepaliveIntervalMs", Number.NaN],
    ["keepaliveTimeoutMs", 0],
    ["keepaliveTimeoutMs", Infinity],
  ])("refuses %s: %s with INVALID_ARGUMENT naming it", (name, value) => {
    let caught: unknown;
    try {
      createAgentClient(server.baseUrl, { protocol: "grpc", [name]: value });
    } catch (err) {
      caught = err;
    }
    expect(ConnectError.from(caught).code).toBe(Code.InvalidArgument);
    expect(ConnectError.from(caught).rawMessage).toContain(name);
  });
});
