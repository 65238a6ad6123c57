import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { writeTokensFile } from "../harness/auth-clients.js";
import { HTTP_FUZZ_CLASSES, httpFuzzCases } from "./http-fuzz-cases.js";
import { runHttpFuzz } from "./http-fuzz-runner.js";

// A bounded, seeded slice of the HTTP-layer fuzz of `npm run fuzz` (issue 36):
// malformed authorities, headers, methods, request lines, chunked framing,
// pipelining, random bytes, and HTTP/2 SETTINGS, frames and header blocks,
// each on a fresh connection. Every case must be answered or closed, and the
// server must stay up and keep serving.

const SEED = 36;
const CASES = 40 * HTTP_FUZZ_CLASSES.length;

describe.each([
  { auth: "off", args: [] as string[] },
  { auth: "on", args: ["--auth-tokens", writeTokensFile(["http-fuzz-token-0123456789abcdef acme fuzz"])] },
])("the HTTP-layer fuzz slice, auth $auth", ({ args }) => {
  let server: AgentdProcess;
  beforeAll(async () => {
    // A short first-bytes timeout so a case the server waits on ends quickly either way.
    server = await startAgentd({ args: [...args, "--first-bytes-timeout-ms", "2000"] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it(`answers or closes every one of ${CASES} seeded cases and keeps serving`, async () => {
    const report = await runHttpFuzz({
      port: server.port,
      cases: httpFuzzCases(SEED, CASES),
      concurrency: 8,
      timeoutMs: 1500,
      alive: () => server.proc.exitCode === null,
    });
    expect(server.proc.exitCode).toBeNull();
    expect(report.sent).toBe(CASES);
    expect(report.hangs).toBe(0);
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    expect((await health.check({})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  }, 30_000);
});
