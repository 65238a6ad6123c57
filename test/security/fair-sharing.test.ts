import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { durationMs } from "@bufbuild/protobuf/wkt";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { until } from "../harness/until.js";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";
import { RetryInfoSchema } from "../../src/server/retry-info.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { textInput, WireChat } from "../harness/wire-chat.js";

const ACME = "acme-token-0123456789abcdef012345";
const GLOBEX = "globex-token-0123456789abcdef0123";
const INITECH = "initech-token-0123456789abcdef012";
const TOKENS = [`${ACME} acme`, `${GLOBEX} globex`, `${INITECH} initech`];

const run = (server: AgentdProcess, token: string) =>
  clientWithToken(server.baseUrl, token).run({ init: { agent: "assistant" }, input: textInput("hi") });

/** A Health/Watch on its own connection, held open until `signal` aborts; resolves when it is streaming. */
async function holdWatch(baseUrl: string, signal: AbortSignal): Promise<{ ended: Promise<ConnectError | undefined> }> {
  const health = createClient(Health, createGrpcTransport({ baseUrl }));
  const stream = health.watch({ service: "" }, { signal })[Symbol.asyncIterator]();
  const first = stream.next();
  const ended = first.then(async () => {
    for (;;) if ((await stream.next()).done) return undefined;
  });
  await first.catch(() => undefined);
  return { ended: ended.catch((err: unknown) => ConnectError.from(err)) };
}

/** The retry delay (ms) of the `google.rpc.RetryInfo` detail of `err`. */
function retryDelayMs(err: ConnectError): number {
  const [info] = err.findDetails(RetryInfoSchema) as unknown as { retryDelay?: Duration }[];
  expect(info?.retryDelay).toBeDefined();
  return durationMs(info!.retryDelay!);
}

describe("unauthenticated clients holding every connection they may (--max-connections 40)", () => {
  let server: AgentdProcess;
  const holders = new AbortController();
  beforeAll(async () => {
    server = await startAgentd({ args: ["--auth-tokens", writeTokensFile(TOKENS), "--max-connections", "40"] });
  });
  afterAll(async () => {
    holders.abort();
    await server?.stop();
  });

  it("leaves room for a tenant: its Run succeeds while 60 Health/Watch holders try to hold connections", async () => {
    for (let i = 0; i < 60; i++) await holdWatch(server.baseUrl, holders.signal);
    // Without room kept for tenants its connection, the 41st, would be closed at once (the call fails
    // UNAVAILABLE); the holders stream on and never free one. The outcome tells, not how fast it came.
    const { output } = await run(server, ACME);
    expect(output?.finishReason).toBe(FinishReason.STOP);
  });
});

describe("fair-share limits", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: [
        "--auth-tokens",
        writeTokensFile(TOKENS),
        "--max-unauthenticated-calls",
        "2",
        "--unauthenticated-stream-timeout-ms",
        "1500",
        "--tenant-max-invocations",
        "1",
        "--tenant-rate",
        "5",
        "--tenant-burst",
        "5",
      ],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses a call without credentials over --max-unauthenticated-calls with RESOURCE_EXHAUSTED and retry info, while tenants are served", async () => {
    const holders = new AbortController();
    try {
      await holdWatch(server.baseUrl, holders.signal);
      await holdWatch(server.baseUrl, holders.signal);
      const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
      const err = await failure(() => health.check({ service: "" }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(retryDelayMs(err)).toBeGreaterThan(0);
      expect((await run(server, GLOBEX)).output?.finishReason).toBe(FinishReason.STOP);
    } finally {
      holders.abort();
    }
  });

  it("ends a Health/Watch without credentials UNAVAILABLE after --unauthenticated-stream-timeout-ms", async () => {
    // The previous test's holders are gone once a call without credentials is served again.
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    await until("a free unauthenticated slot", () => health.check({ service: "" }).then(() => true));
    const holders = new AbortController();
    try {
      const started = performance.now();
      const { ended } = await holdWatch(server.baseUrl, holders.signal);
      const err = await ended;
      expect(err?.code).toBe(Code.Unavailable);
      expect(performance.now() - started).toBeGreaterThan(1400);
    } finally {
      holders.abort();
    }
  });

  it("refuses a tenant's invocation over --tenant-max-invocations with RESOURCE_EXHAUSTED and retry info, serves another tenant, and frees the slot when the first ends", async () => {
    const chat = new WireChat(clientWithToken(server.baseUrl, ACME), { init: { agent: "assistant" } });
    chat.sendText("holding my one invocation");
    await chat.nextTurn();
    const err = await failure(() => run(server, ACME));
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toContain("acme");
    expect(retryDelayMs(err)).toBe(1000);
    expect((await run(server, GLOBEX)).output?.finishReason).toBe(FinishReason.STOP);
    await chat.finish();
    // The slot is freed as the invocation's call ends on the server, just after the client saw its end.
    // One probe per 250 ms stays inside the tenant's rate (5 per second), so only the slot can refuse it.
    const freed = await until("acme's invocation slot freed", () => run(server, ACME), { intervalMs: 250 });
    expect(freed.output?.finishReason).toBe(FinishReason.STOP);
  });

  it("refuses a tenant's calls over --tenant-rate / --tenant-burst with RESOURCE_EXHAUSTED and retry info, while another tenant is served", async () => {
    const initech = clientWithToken(server.baseUrl, INITECH);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () =>
        initech.listAgents({}).then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        ),
      ),
    );
    const refused = outcomes.filter((e): e is ConnectError => e !== undefined);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const err of refused) {
      expect(err.code).toBe(Code.ResourceExhausted);
      const delay = retryDelayMs(err);
      expect(delay).toBeGreaterThan(0);
      expect(delay).toBeLessThanOrEqual(200);
    }
    expect((await clientWithToken(server.baseUrl, GLOBEX).listAgents({})).agents.length).toBeGreaterThan(0);
  });
});

describe("fair-share flags", () => {
  const serve = (argv: string[]) => {
    const command = parseCommandLine(["serve", ...argv], {});
    if (command.kind !== "serve") throw new Error("not serve");
    return command.config;
  };

  it("keeps the unauthenticated connections below --max-connections", () => {
    expect(() => serve(["--max-connections", "40", "--max-unauthenticated-connections", "40"])).toThrow(UsageError);
    expect(serve(["--max-connections", "40", "--max-unauthenticated-connections", "39"]).fairShare).toEqual({
      unauthenticated: { maxConnections: 39 },
    });
  });

  it("keeps --tenant-max-connections below --max-connections", () => {
    expect(() => serve(["--max-connections", "40", "--tenant-max-connections", "40"])).toThrow(UsageError);
    expect(serve(["--max-connections", "40", "--tenant-max-connections", "0"]).fairShare).toEqual({
      unauthenticated: { maxTenantConnections: 0 },
    });
  });

  it("sets the burst to twice --tenant-rate unless --tenant-burst says otherwise", () => {
    expect(serve(["--tenant-rate", "10"]).fairShare?.tenants).toEqual({ requestsPerSecond: 10, burst: 20 });
    expect(serve(["--tenant-rate", "10", "--tenant-burst", "3"]).fairShare?.tenants).toEqual({
      requestsPerSecond: 10,
      burst: 3,
    });
    expect(serve([]).fairShare).toBeUndefined();
  });
});
