import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { constants } from "node:http2";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { writeTokensFile } from "../harness/auth-clients.js";
import { http1Exchange, responseComplete } from "../harness/raw-http1.js";
import { openSession } from "../robustness/raw-rpc.js";

// Authentication happens from the headers, before any body is read or decoded
// (issue 36): a request that announces a large body and sends only part of it,
// never finishing, is refused UNAUTHENTICATED at once. A server that read the
// body first would still be waiting for the rest when the test gives up.

const TOKEN = "body-probe-token-0123456789abcd";
const RUN = "/agentd.v1.AgentService/Run";
const ANNOUNCED = 3_000_000;
const SENT = 64 * 1024;
/**
 * When the test gives up waiting for an answer: long, for a loaded machine, yet well under every
 * timeout of the server (a request has 300 s to arrive, a connection idles 60 s). A server that read
 * the body first is still waiting for it then, without an answer; the outcome tells them apart, not
 * how fast it came.
 */
const GIVE_UP_MS = 30_000;

describe("credentials are checked before the request body is read", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({ args: ["--auth-tokens", writeTokensFile([`${TOKEN} acme probes`])] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each([
    { case: "no token", authorization: "" },
    { case: "an unknown token", authorization: "Authorization: Bearer not-a-known-token-0123456789\r\n" },
  ])("refuses a Connect unary call with $case whose body never finishes, at once", async ({ authorization }) => {
    const head =
      `POST ${RUN} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${authorization}` +
      `Content-Length: ${ANNOUNCED}\r\n\r\n`;
    const partial = Buffer.concat([Buffer.from(head, "latin1"), Buffer.alloc(SENT, 0x20)]);
    const answer = await http1Exchange(server.port, partial, { timeoutMs: GIVE_UP_MS, until: responseComplete });
    expect(answer.status).toBe(401);
    expect(answer.text).toContain('"code":"unauthenticated"');
  });

  it("logs the refusal with its code and never the token", async () => {
    const token = "unknown-token-logged-never-0123456789";
    const head =
      `POST ${RUN} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${token}\r\nContent-Length: ${ANNOUNCED}\r\n\r\n`;
    await http1Exchange(server.port, Buffer.from(head, "latin1"), { timeoutMs: GIVE_UP_MS, until: responseComplete });
    await server.logLine(
      (l) =>
        l.msg === "rpc rejected before its handler" &&
        l.procedure === RUN &&
        l.code === "UNAUTHENTICATED" &&
        l.error === "the credentials were not accepted",
    );
    expect(server.logs()).not.toContain(token);
  });

  it("refuses a gRPC unary call without a token whose message never finishes, at once", async () => {
    const session = openSession(server.baseUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": RUN,
        "content-type": "application/grpc",
        te: "trailers",
      });
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(ANNOUNCED, 1);
      stream.write(Buffer.concat([prefix, Buffer.alloc(SENT)]));
      const status = await new Promise<string | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), GIVE_UP_MS);
        const settle = (headers: Record<string, unknown>): void => {
          if (headers["grpc-status"] === undefined) return;
          clearTimeout(timer);
          resolve(String(headers["grpc-status"]));
        };
        stream.on("response", settle);
        stream.on("trailers", settle);
        stream.on("error", () => undefined);
        stream.resume();
      });
      expect(status).toBe("16");
      stream.close(constants.NGHTTP2_CANCEL);
    } finally {
      session.close();
    }
  });
});
