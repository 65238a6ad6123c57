/**
 * The processes and the load of `npm run bench:wire` (bench/wire/): the
 * benchmark compares agentd with a bare echo server, so both must do the same
 * work per turn, and the load must time what it says.
 */
import { toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { startAgentdProcess, startBareProcess, type ServerProcess } from "../../bench/wire/server-process.js";
import { ChatSession, concurrentTurns, sequentialTurns } from "../../bench/wire/wire-load.js";
import { AgentService, ChatResponseSchema } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/ts/grpc/health/v1/health_pb.js";

/** The encoded size of each response of a Chat stream's second turn (the first may differ: it starts the session). */
async function secondTurnSizes(server: ServerProcess): Promise<number[]> {
  const session = new ChatSession(createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl })));
  await session.turn();
  const sizes: number[] = [];
  await session.turn((response) => sizes.push(toBinary(ChatResponseSchema, response).length));
  await session.finish();
  return sizes;
}

describe("bench:wire servers and load", () => {
  let server: ServerProcess | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("the bare echo server answers each input with its echo, and nothing to the init before it", async () => {
    server = await startBareProcess("bare");
    // Each turn checks that the text streamed before its TurnEnd is the echo of its own input.
    await expect(sequentialTurns(server, 3, 0)).resolves.toHaveLength(3);
  });

  it("agentd answers each input with its echo", async () => {
    server = await startAgentdProcess("agentd", "memory:", "info");
    await expect(sequentialTurns(server, 3, 0)).resolves.toHaveLength(3);
  });

  it("the bare echo server sends agentd's responses, byte for byte in size", async () => {
    server = await startAgentdProcess("agentd", "memory:", "info");
    const agentd = await secondTurnSizes(server);
    await server.stop();
    server = await startBareProcess("bare");
    expect(await secondTurnSizes(server)).toEqual(agentd);
  });

  it("the bare echo server answers a health Check with SERVING, as agentd does (the health rows' baseline)", async () => {
    const check = async (): Promise<HealthCheckResponse_ServingStatus> =>
      (await createClient(Health, createGrpcTransport({ baseUrl: server!.baseUrl })).check({})).status;
    server = await startAgentdProcess("agentd", "memory:", "info");
    expect(await check()).toBe(HealthCheckResponse_ServingStatus.SERVING);
    await server.stop();
    server = await startBareProcess("bare");
    expect(await check()).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("agentd starts at a log level that hides its listening line", async () => {
    server = await startAgentdProcess("agentd", "memory:", "warn");
    const result = await concurrentTurns(server, 2, 4, 2);
    expect(result.turns).toBe(4);
    expect(result.serverCpuSeconds).toBeGreaterThanOrEqual(0);
  });
});
