import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { http1Exchange } from "../harness/raw-http1.js";
import { textInput } from "../harness/wire-chat.js";
import { frame, openSession, rawRequest } from "./raw-rpc.js";

// Every request path is total (issue 36): a Host / :authority that is not a
// valid host[:port], or an HTTP/1.0 request without Host, used to crash the
// process from connect-node's URL building, whatever the path (the open health
// check included), protocol or authentication. Each probe must be answered
// INVALID_ARGUMENT in its protocol's framing, and the server must go on serving.

const TOKEN = "authority-probe-token-0123456789";
const BAD_AUTHORITIES = ["localhost:99999", "a:b", "[::1", ":80"];
const HEALTH = "/grpc.health.v1.Health/Check";
const RUN = "/agentd.v1.AgentService/Run";

interface Http1Probe {
  path: string;
  contentType: string;
  body: Buffer;
  /** Connect answers 400 with a JSON error; gRPC-Web 200 with grpc-status 3. */
  protocol: "connect" | "grpc-web";
}

const HTTP1_PROBES: Http1Probe[] = [
  { path: HEALTH, contentType: "application/json", body: Buffer.from("{}"), protocol: "connect" },
  { path: RUN, contentType: "application/json", body: Buffer.from("{}"), protocol: "connect" },
  { path: RUN, contentType: "application/grpc-web+proto", body: frame(new Uint8Array()), protocol: "grpc-web" },
];

function http1Request(probe: Http1Probe, hostLine: string | undefined, version = "1.1"): Buffer {
  const head =
    `POST ${probe.path} HTTP/${version}\r\n` +
    (hostLine === undefined ? "" : `Host: ${hostLine}\r\n`) +
    `Content-Type: ${probe.contentType}\r\nContent-Length: ${probe.body.length}\r\nConnection: close\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), probe.body]);
}

function expectHttp1InvalidArgument(probe: Http1Probe, answer: { text: string; status: number }): void {
  if (probe.protocol === "connect") {
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('"code":"invalid_argument"');
  } else {
    expect(answer.status).toBe(200);
    expect(answer.text).toMatch(/grpc-status: ?3\r\n/i);
  }
}

const H2_PROBES = [
  { path: HEALTH, protocol: "grpc" },
  { path: RUN, protocol: "grpc" },
  { path: RUN, protocol: "connect" },
] as const;

describe.each([
  { auth: "off", args: [] as string[] },
  { auth: "on", args: ["--auth-tokens", writeTokensFile([`${TOKEN} acme probes`])] },
])("a request with a malformed authority, auth $auth", ({ auth, args }) => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({ args });
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function expectStillServing(): Promise<void> {
    expect(server.proc.exitCode).toBeNull();
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  }

  describe.each(HTTP1_PROBES)("HTTP/1.1 $protocol $path", (probe) => {
    it.each(BAD_AUTHORITIES)("answers Host %j INVALID_ARGUMENT and keeps serving", async (authority) => {
      const answer = await http1Exchange(server.port, http1Request(probe, authority));
      expectHttp1InvalidArgument(probe, answer);
      await expectStillServing();
    });

    it("answers an HTTP/1.0 request without Host INVALID_ARGUMENT and keeps serving", async () => {
      const answer = await http1Exchange(server.port, http1Request(probe, undefined, "1.0"));
      expectHttp1InvalidArgument(probe, answer);
      expect(answer.text).toMatch(/no( |%20)Host( |%20)header/);
      await expectStillServing();
    });
  });

  describe.each(H2_PROBES)("HTTP/2 $protocol $path", ({ path, protocol }) => {
    it.each(BAD_AUTHORITIES)("answers :authority %j INVALID_ARGUMENT and keeps serving", async (authority) => {
      const session = openSession(server.baseUrl);
      try {
        const headers =
          protocol === "grpc"
            ? { ":authority": authority, "content-type": "application/grpc", te: "trailers" }
            : { ":authority": authority, "content-type": "application/json" };
        const answer = await rawRequest(
          session,
          path,
          protocol === "grpc" ? frame(new Uint8Array()) : Buffer.from("{}"),
          {
            headers,
          },
        );
        if (protocol === "grpc") expect(answer.grpcStatus).toBe(3);
        else {
          expect(answer.httpStatus).toBe(400);
          expect(answer.body.toString()).toContain('"code":"invalid_argument"');
        }
      } finally {
        session.close();
      }
      await expectStillServing();
    });
  });

  it("still runs a turn on a fresh connection after all the probes", async () => {
    const client = clientWithToken(server.baseUrl, auth === "on" ? TOKEN : undefined);
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("hi") });
    expect(output?.finishReason).toBe(FinishReason.STOP);
  });
});
