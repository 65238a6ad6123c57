import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { bearer, clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { textInput } from "../harness/wire-chat.js";
import { prng } from "../robustness/bad-payloads.js";
import { callToEnd, sendRandomRequests, SERVER_FAULTS, type AnyClient } from "../robustness/random-calls.js";
import { RandomRequests, type KnownNames } from "../robustness/random-requests.js";

// Tenant B sends random well-formed requests to every method, most of them
// naming tenant A's sessions and snapshots. Whatever B sends, nothing of A's
// may reach B (no answer or error carries A's IDs with A's data, or A's
// text) and nothing of A's may change; another tenant's session is
// NOT_FOUND, never "forbidden".
const A = "tenant-a-token-0123456789abcdef0123";
const B = "tenant-b-token-0123456789abcdef0123";
/** What only tenant A's conversations hold. */
const A_SECRET = "tenant-a-secret";
const CALLS = 400;
const IN_FLIGHT = 16;
const CALL_MS = 10_000;

/** What tenant A can see of a session: enough to tell any change. */
async function sessionAsA(client: Client<typeof AgentService>, sessionId: string): Promise<unknown> {
  const { session } = await client.getSession({ sessionId });
  const { snapshots } = await client.listSnapshots({ sessionId, agent: session!.agent });
  return {
    headSnapshotId: session!.headSnapshotId,
    turnCount: session!.turnCount,
    labels: session!.labels,
    snapshots: snapshots.map((s) => s.snapshotId),
  };
}

describe.each(["memory", ...Object.keys(sharedStores)])(
  "tenant B's random requests naming tenant A's sessions (%s store)",
  (kind) => {
    let server: AgentdProcess;
    let shared: SharedStore | undefined;
    let asA: Client<typeof AgentService>;
    const ofA: KnownNames = { agents: [], sessions: [], snapshots: [] };
    const before = new Map<string, unknown>();

    beforeAll(async () => {
      shared = kind === "memory" ? undefined : await sharedStores[kind]!();
      server = await startAgentd({
        args: [
          "--store",
          shared?.uri ?? "memory:",
          "--auth-tokens",
          writeTokensFile([`${A} tenant-a`, `${B} tenant-b`]),
          "test/fixtures/agents.ts",
        ],
      });
      asA = clientWithToken(server.baseUrl, A);
      ofA.agents = (await asA.listAgents({})).agents.map((a) => a.name);
      for (const agent of ["assistant", "ledger-notes", "tasks"]) {
        const { output } = await asA.run({
          init: { agent, labels: { team: "a" } },
          input: textInput(`${A_SECRET} for ${agent}`),
        });
        ofA.sessions.push(output!.sessionId);
        ofA.snapshots.push(output!.snapshotId);
        before.set(output!.sessionId, await sessionAsA(asA, output!.sessionId));
      }
    });
    afterAll(async () => {
      await server?.stop();
      await shared?.stop();
    });

    it("no answer to B carries A's text or data, nothing is a server fault, and A's sessions are unchanged", async () => {
      const rnd = prng(5150 + kind.length);
      const requests = new RandomRequests(rnd, ofA);
      const clients = [
        createClient(AgentService, createGrpcTransport({ baseUrl: server.baseUrl, interceptors: [bearer(B)] })),
        createClient(
          AgentService,
          createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2", interceptors: [bearer(B)] }),
        ),
      ] as unknown as AnyClient[];
      const leaks: string[] = [];
      const faults: string[] = [];
      const codes = new Map<string, number>();
      await sendRandomRequests(requests, AgentService.methods, CALLS, IN_FLIGHT, async (method, request) => {
        let code = "OK";
        let text: string;
        try {
          const answered = await callToEnd(requests.pick(clients), method, request, CALL_MS);
          text = JSON.stringify(answered, (_key, value: unknown) =>
            typeof value === "bigint" ? value.toString() : value,
          );
        } catch (err) {
          const e = ConnectError.from(err);
          code = Code[e.code];
          text = e.rawMessage;
          if (SERVER_FAULTS.has(e.code)) faults.push(`${method.name}: ${code} ${e.rawMessage.slice(0, 200)}`);
        }
        codes.set(`${method.name} ${code}`, (codes.get(`${method.name} ${code}`) ?? 0) + 1);
        // A's text never reaches B; nor does an answer that names A's session or snapshot succeed.
        if (text.includes(A_SECRET)) leaks.push(`${method.name} ${code}: ${text.slice(0, 300)}`);
        if (code === "OK" && [...ofA.sessions, ...ofA.snapshots].some((id) => text.includes(id)))
          leaks.push(`${method.name} OK named A's session or snapshot: ${text.slice(0, 300)}`);
      });

      expect(leaks).toEqual([]);
      expect(faults).toEqual([]);
      for (const sessionId of ofA.sessions) expect(await sessionAsA(asA, sessionId)).toEqual(before.get(sessionId));
      // B's calls that named A's sessions were answered as for sessions that do not exist.
      for (const method of ["GetSession", "GetSnapshot", "ListSnapshots", "UpdateSession"]) {
        expect(codes.get(`${method} NotFound`) ?? 0, `${method} NOT_FOUND`).toBeGreaterThan(0);
        expect(codes.get(`${method} PermissionDenied`) ?? 0).toBe(0);
      }
    });

    it("B lists none of A's sessions", async () => {
      const { sessions } = await clientWithToken(server.baseUrl, B).listSessions({});
      expect(sessions.filter((s) => ofA.sessions.includes(s.sessionId))).toEqual([]);
    });
  },
);
