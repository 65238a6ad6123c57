import { ConnectError, Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { FaultProxy } from "../harness/fault-proxy.js";
import { openRawConnection } from "../harness/raw-grpc.js";
import { until } from "../harness/until.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

/**
 * HTTP/2 keepalive against a real `agentd serve` with short PING settings: a
 * call whose client vanished without closing its connection (a frozen proxy:
 * no byte forwarded either way, no FIN, no RST) ends, and frees the session it
 * held; a live client that stays silent keeps its stream, however many PINGs
 * pass.
 */

/** PING every 200 ms; an unanswered one closes the session after 5 s (generous: a live client on a loaded machine answers well within it). */
const KEEPALIVE_ARGS = ["--keepalive-interval-ms", "200", "--keepalive-timeout-ms", "5000"];

describe("HTTP/2 keepalive", () => {
  let server: AgentdProcess;
  let proxy: FaultProxy;
  beforeAll(async () => {
    server = await startAgentd({ args: KEEPALIVE_ARGS });
    proxy = new FaultProxy({ target: { host: "127.0.0.1", port: server.port } });
    await proxy.start();
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  it("ends a Chat whose client vanished, so the session it held takes the next caller's turn", async () => {
    const vanishing = new WireChat(agentServiceClient(`http://127.0.0.1:${proxy.port}`, "grpc"), {
      init: { agent: "assistant" },
    });
    vanishing.sendText("before the client vanished");
    const { turnEnd } = await vanishing.nextTurn();
    const sessionId = turnEnd.sessionId;
    expect(sessionId).not.toBe("");
    proxy.freezeAll(); // the client's host is gone: its connection stays open, nothing gets through

    // The session is held by the vanished client's Chat (REJECT: ABORTED) until the server ends that call.
    const direct = agentServiceClient(server.baseUrl, "grpc");
    const next = await until("the vanished client's Chat to let the session go", async () => {
      try {
        const { output } = await direct.run({
          init: { agent: "assistant", sessionId },
          input: textInput("the next caller"),
        });
        return output;
      } catch (err) {
        if (ConnectError.from(err).code === Code.Aborted) return undefined; // still held: try again
        throw err;
      }
    });
    expect(next?.sessionId).toBe(sessionId);
    expect(next?.message?.content[0]?.kind).toEqual({ case: "text", value: "echo: the next caller" });
  });

  it("keeps a live client's silent stream open across many PINGs, which the client answers", async () => {
    const connection = await openRawConnection(server.baseUrl);
    let pings = 0;
    const fivePings = new Promise<void>((resolve) =>
      connection.session.on("ping", () => {
        if (++pings === 5) resolve();
      }),
    );
    const watch = connection.call("/grpc.health.v1.Health/Watch"); // a server stream that stays open, silent
    await watch.answered;
    await Promise.race([fivePings, connection.closed]); // five PING intervals passed with nothing else on the connection
    expect(pings).toBeGreaterThanOrEqual(5);
    expect(watch.status()).toBeUndefined();
    expect(connection.session.closed || connection.session.destroyed).toBe(false);
    connection.close();
  });
});
