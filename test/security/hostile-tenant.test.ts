import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "../../gen/ts/grpc/health/v1/health_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { openRawConnection, type RawConnection } from "../harness/raw-grpc.js";
import { textInput } from "../harness/wire-chat.js";
import { GRPCURL } from "../server/test-server.js";

// Two tenants on one real agentd: B attacks, A measures. Each test asserts
// that the server lives, that B is refused with a named limit, and that A's
// calls succeed meanwhile (each within the test's timeout). A's latencies are
// printed, not asserted: the target is a p99 under 250 ms on an idle
// machine, which a shared test machine cannot promise (no wall-clock bounds,
// CONTRIBUTING.md).
const A = "tenant-a-token-0123456789abcdef0123";
const B = "tenant-b-token-0123456789abcdef0123";
const TOKENS = [`${A} tenant-a`, `${B} tenant-b`];

const WATCH = "/grpc.health.v1.Health/Watch";

/** The p-th percentile (0..100) of `values`. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** `count` Runs of tenant A, each on a fresh connection of its own; resolves with their latencies (ms). */
async function tenantARuns(server: AgentdProcess, count: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const { output } = await clientWithToken(server.baseUrl, A).run({
      init: { agent: "assistant" },
      input: textInput(`measure ${i}`),
    });
    latencies.push(performance.now() - started);
    expect(output?.finishReason).toBe(FinishReason.STOP);
  }
  return latencies;
}

describe("one tenant opening 1,030 connections at the default --max-connections 1024", () => {
  let server: AgentdProcess;
  const held: RawConnection[] = [];
  beforeAll(async () => {
    server = await startAgentd({ args: ["--auth-tokens", writeTokensFile(TOKENS)] });
  });
  afterAll(async () => {
    for (const connection of held) connection.close();
    await server?.stop();
  });

  it("holds B to its share (--tenant-max-connections, a quarter) and leaves A room: A's Runs on fresh connections succeed", async () => {
    // B holds a Health/Watch with its token on each connection: counted as B's.
    const calls = [];
    for (let i = 0; i < 1030; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, 1030 - i) }, () => openRawConnection(server.baseUrl)),
      );
      held.push(...batch);
      const started = batch.map((c) => c.call(WATCH, B));
      await Promise.all(started.map((c) => c.answered));
      calls.push(...started);
    }
    const refused = calls.filter((c) => c.status() !== undefined);
    const streaming = calls.length - refused.length;
    expect(streaming).toBeLessThanOrEqual(256);
    expect(streaming).toBeGreaterThanOrEqual(200); // those not refused hold their connection
    for (const call of refused) {
      const { status, message } = await call.ended;
      if (status === -1) continue; // its connection was closed, as unauthenticated ones over the share are
      expect(status).toBe(Code.ResourceExhausted);
      expect(message).toContain("--tenant-max-connections");
    }

    const latencies = await tenantARuns(server, 10);
    expect(latencies).toHaveLength(10); // each of A's Runs succeeded (STOP) on a fresh connection
    console.log(
      `tenant A: 10 Runs on fresh connections beside 1,030 of B's: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms (issue target: < 250 ms)`,
    );
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    expect((await health.check({ service: "" })).status).toBeGreaterThan(0);
  });
});

describe("grpcurl with a valid token while 60 unauthenticated holders fill --max-connections 40", () => {
  let server: AgentdProcess;
  const held: RawConnection[] = [];
  beforeAll(async () => {
    server = await startAgentd({ args: ["--auth-tokens", writeTokensFile(TOKENS), "--max-connections", "40"] });
  });
  afterAll(async () => {
    for (const connection of held) connection.close();
    await server?.stop();
  });

  const grpcurl = async (args: string[]): Promise<string> =>
    (
      await promisify(execFile)(
        GRPCURL,
        ["-plaintext", "-H", `authorization: Bearer ${A}`, ...args.slice(0, -1), server.target, args.at(-1)!],
        { timeout: 30_000 },
      )
    ).stdout;

  it("lists the services (open reflection counts as A's call) and runs a turn", async () => {
    // 59 idle connections, then one holding 20 Health/Watch streams: every call without
    // credentials the server allows (half of 40) is taken, and the holder is never the
    // oldest unauthenticated connection a new one closes.
    for (let i = 0; i < 59; i++) held.push(await openRawConnection(server.baseUrl));
    const holder = await openRawConnection(server.baseUrl);
    held.push(holder);
    const watches = Array.from({ length: 20 }, () => holder.call(WATCH));
    await Promise.all(watches.map((w) => w.answered));
    expect(watches.every((w) => w.status() === undefined)).toBe(true);
    const anonymous = await (await openRawConnection(server.baseUrl)).call("/grpc.health.v1.Health/Check").ended;
    expect(anonymous.status).toBe(Code.ResourceExhausted);

    const listed = await grpcurl(["list"]);
    expect(listed).toContain("agentd.v1.AgentService");
    expect(listed).toContain("grpc.health.v1.Health");
    const ran = JSON.parse(
      await grpcurl([
        "-d",
        JSON.stringify({
          init: { agent: "assistant" },
          input: { message: { role: "ROLE_USER", content: [{ text: "hi" }] } },
        }),
        "agentd.v1.AgentService/Run",
      ]),
    ) as { output?: { finishReason?: string } };
    expect(ran.output?.finishReason).toBe("FINISH_REASON_STOP");
  });
});

describe("a call refused for its tenant's limits (--tenant-rate 1, --max-unauthenticated-connections 3)", () => {
  let server: AgentdProcess;
  const held: RawConnection[] = [];
  beforeAll(async () => {
    server = await startAgentd({
      args: [
        "--auth-tokens",
        writeTokensFile(TOKENS),
        "--max-connections",
        "10",
        "--max-unauthenticated-connections",
        "3",
        "--tenant-rate",
        "1",
        "--tenant-burst",
        "1",
      ],
    });
  });
  afterAll(async () => {
    for (const connection of held) connection.close();
    await server?.stop();
  });

  it("never marks its connection authenticated: it is the first closed when unauthenticated connections go over the share", async () => {
    const admitted = await openRawConnection(server.baseUrl);
    const older = await openRawConnection(server.baseUrl); // unauthenticated, older than the refused one
    const refused = await openRawConnection(server.baseUrl);
    held.push(admitted, older, refused);
    expect((await admitted.call("/agentd.v1.AgentService/ListAgents", B).ended).status).toBe(0);
    const refusal = await refused.call("/agentd.v1.AgentService/ListAgents", B).ended;
    expect(refusal.status).toBe(Code.ResourceExhausted);
    expect(refusal.message).toContain("request rate");
    // Two newer connections without calls: one unauthenticated too many, and the refused one goes first.
    for (let i = 0; i < 2; i++) held.push(await openRawConnection(server.baseUrl));
    await refused.closed;
    const stillOpen = await Promise.race([
      Promise.race([admitted.closed, older.closed]).then(() => "closed"),
      new Promise((resolve) => setTimeout(() => resolve("open"), 300)),
    ]);
    expect(stillOpen).toBe("open");
    expect(held.slice(3).every((c) => !c.session.closed && !c.session.destroyed)).toBe(true);
  });
});
