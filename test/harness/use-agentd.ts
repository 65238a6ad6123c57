import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll } from "vitest";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { startAgentd, type AgentdProcess, type StartAgentdOptions } from "./agentd-process.js";
import { agentServiceClient, type WireProtocol } from "./wire-clients.js";

/** A server started for a test file, and a generated client for it. */
export interface AgentdFixture {
  readonly server: AgentdProcess;
  readonly client: Client<typeof AgentService>;
}

/**
 * Starts a real agentd process before the file's tests (with `options.args`,
 * e.g. an agents module) and stops it after them. Read `server` and `client`
 * inside tests, not at module load.
 */
export function useAgentd(options: StartAgentdOptions = {}, protocol: WireProtocol = "grpc"): AgentdFixture {
  let server: AgentdProcess | undefined;
  let client: Client<typeof AgentService> | undefined;
  beforeAll(async () => {
    server = await startAgentd(options);
    client = agentServiceClient(server.baseUrl, protocol);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get server() {
      if (!server) throw new Error("the agentd fixture is only available inside tests");
      return server;
    },
    get client() {
      if (!client) throw new Error("the agentd fixture is only available inside tests");
      return client;
    },
  };
}

/** The text of each message of a wire snapshot's state. */
export function snapshotTexts(
  snapshot: { state?: { messages: { content: { kind: { case?: string; value?: unknown } }[] }[] } } | undefined,
): string[] {
  return (snapshot?.state?.messages ?? []).map((m) =>
    m.content.map((p) => (p.kind.case === "text" ? String(p.kind.value) : "")).join(""),
  );
}
