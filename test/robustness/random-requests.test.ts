import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { transportFor, type WireProtocol } from "../harness/wire-clients.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { prng } from "./bad-payloads.js";
import { callToEnd, sendRandomRequests, SERVER_FAULTS, type AnyClient } from "./random-calls.js";
import { RandomRequests, type KnownNames } from "./random-requests.js";

/** Calls per store, and how many are in flight at once (on the same few sessions). */
const CALLS = 600;
const IN_FLIGHT = 16;
/** A call still open after this is cancelled by the client (a slow agent's turn; not a finding). */
const CALL_MS = 10_000;
/** One call's outcome: its method and code, and on a server fault what was sent. */
interface Outcome {
  method: string;
  code: Code | "OK";
  fault?: string;
}

/** A short, printable form of a request, for a failure message. */
function describeRequest(request: unknown): string {
  return JSON.stringify(request, (_key, value: unknown) => {
    if (typeof value === "bigint") return `${value}n`;
    if (value instanceof Uint8Array) return `bytes(${value.length})`;
    if (typeof value === "string" && value.length > 80) return `string(${value.length})`;
    return value;
  }).slice(0, 800);
}

describe.each(["memory", ...Object.keys(sharedStores)])(
  "random well-formed requests to every method (%s store)",
  (kind) => {
    let server: AgentdProcess;
    let shared: SharedStore | undefined;
    const clients = new Map<WireProtocol, Client<typeof AgentService>>();
    const known: KnownNames = { agents: [], sessions: [], snapshots: [] };

    beforeAll(async () => {
      shared = kind === "memory" ? undefined : await sharedStores[kind]!();
      const store = shared?.uri ?? "memory:";
      server = await startAgentd({ args: ["--store", store, "test/fixtures/agents.ts"] });
      for (const protocol of ["grpc", "connect-h2"] as const) {
        clients.set(protocol, createClient(AgentService, transportFor(server.baseUrl, protocol)));
      }
      const client = clients.get("grpc")!;
      known.agents = (await client.listAgents({})).agents.map((a) => a.name);
      for (const agent of ["assistant", "ledger-notes", "tasks"]) {
        const { output } = await client.run({ init: { agent }, input: textInput(`hello ${agent}`) });
        known.sessions.push(output!.sessionId);
        known.snapshots.push(output!.snapshotId);
      }
    });
    afterAll(async () => {
      await server?.stop();
      await shared?.stop();
    });

    /** {@link CALLS} random requests, {@link IN_FLIGHT} at once, half over gRPC and half over Connect JSON. */
    async function fuzz(seed: number): Promise<Outcome[]> {
      const rnd = prng(seed);
      const requests = new RandomRequests(rnd, known);
      const outcomes: Outcome[] = [];
      await sendRandomRequests(requests, AgentService.methods, CALLS, IN_FLIGHT, async (method, request) => {
        const client = clients.get(rnd() < 0.5 ? "grpc" : "connect-h2") as unknown as AnyClient;
        try {
          await callToEnd(client, method, request, CALL_MS);
          outcomes.push({ method: method.name, code: "OK" });
        } catch (err) {
          const e = ConnectError.from(err);
          const fault = SERVER_FAULTS.has(e.code)
            ? `${method.name}: ${Code[e.code]} ${e.rawMessage.slice(0, 300)} — request ${describeRequest(request)}`
            : undefined;
          outcomes.push({ method: method.name, code: e.code, ...(fault ? { fault } : {}) });
        }
      });
      return outcomes;
    }

    it("every answer is a success or a client fault (never INTERNAL, UNKNOWN, DATA_LOSS, UNAVAILABLE…), and nothing is logged as an error", async () => {
      const from = server.logLines().length;
      const outcomes = await fuzz(4242 + kind.length);

      expect(outcomes.filter((o) => o.fault).map((o) => o.fault)).toEqual([]);
      const errors = server
        .logLines()
        .slice(from)
        .filter((line) => Number(line.level) >= 50);
      expect(errors).toEqual([]);
      // The requests reached every method, and turns got past validation into the runtime and the store.
      for (const method of AgentService.methods) {
        expect(outcomes.filter((o) => o.method === method.name).length, method.name).toBeGreaterThan(10);
      }
      for (const method of ["Run", "RunStream", "Chat"]) {
        expect(
          outcomes.some((o) => o.method === method && o.code === "OK"),
          `${method} succeeded once`,
        ).toBe(true);
      }
    });

    it("afterwards every session it touched still reads (or was deleted), and a new turn runs", async () => {
      const client = clients.get("grpc")!;
      for (const sessionId of known.sessions) {
        const read = await client.getSession({ sessionId }).then(
          () => "OK",
          (err: unknown) => Code[ConnectError.from(err).code],
        );
        expect(["OK", "NotFound"], `session ${sessionId}`).toContain(read);
      }
      const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("still here") });
      expect(output!.finishReason).toBe(FinishReason.STOP);
    });
  },
);
