import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";

// Issue 48, "weighted fair scheduling of CPU-heavy work between tenants":
// tenant B floods the server with forks whose state patch is expensive to
// apply (within every input limit); tenant A's light forks and turns keep
// completing while most of B's flood still waits. Told by the order of
// completions, not by time: A's calls finish before B's flood has.
const A = "tenant-a-token-0123456789abcdef0123";
const B = "tenant-b-token-0123456789abcdef0123";
/** B's heavy forks, sent at once. */
const FLOOD = 40;
/** Doubling copies in one of B's patches: about 2^DOUBLINGS values copied, about 2 MiB counted (limit 4 MiB). */
const DOUBLINGS = 16;

type Op = { op: string; path: string; from?: string; value?: unknown };

function wireOps(list: Op[]) {
  return list.map((o) => ({
    op: o.op,
    path: o.path,
    from: o.from ?? "",
    ...(o.value !== undefined ? { value: fromJson(ValueSchema, o.value as JsonValue) } : {}),
  }));
}

/** A patch whose application copies ~2^DOUBLINGS values, then drops them: the forked state is small and valid. */
const HEAVY = wireOps([
  { op: "add", path: "/scratch", value: [0] },
  ...Array.from({ length: DOUBLINGS }, () => ({ op: "copy", from: "/scratch", path: "/scratch/-" })),
  { op: "remove", path: "/scratch" },
]);
const LIGHT = wireOps([{ op: "add", path: "/notes/-", value: "light" }]);

let server: AgentdProcess;
let a: Client<typeof AgentService>;
let b: Client<typeof AgentService>;

beforeAll(async () => {
  server = await startAgentd({
    args: ["test/fixtures/agents.ts", "--auth-tokens", writeTokensFile([`${A} tenant-a`, `${B} tenant-b`])],
  });
  a = clientWithToken(server.baseUrl, A);
  b = clientWithToken(server.baseUrl, B);
});
afterAll(async () => {
  await server?.stop();
});

/** The snapshot of a new one-turn ledger-notes session of `client` (a fork holds its session: one per fork). */
async function forkPoint(client: Client<typeof AgentService>): Promise<string> {
  const { output } = await client.run({ init: { agent: "ledger-notes" }, input: textInput("first") });
  return output!.snapshotId;
}

/** `count` fork points of `client`. */
const forkPoints = (client: Client<typeof AgentService>, count: number): Promise<string[]> =>
  Promise.all(Array.from({ length: count }, () => forkPoint(client)));

describe("one tenant flooding the server with CPU-heavy forks", () => {
  it("leaves another tenant's light forks and turns their turn: they complete while most of the flood still waits", async () => {
    const [fromA, fromB] = await Promise.all([forkPoints(a, 4), forkPoints(b, FLOOD + 1)]);
    const fork = (client: Client<typeof AgentService>, snapshotId: string, statePatch: typeof HEAVY) =>
      client.run({ init: { agent: "ledger-notes", snapshotId, statePatch }, input: textInput("forked") });
    // Warm up: the first calls compile the code paths.
    expect((await fork(b, fromB.pop()!, HEAVY)).output?.finishReason).toBe(FinishReason.STOP);
    expect((await fork(a, fromA.pop()!, LIGHT)).output?.finishReason).toBe(FinishReason.STOP);

    let bDone = 0;
    const flood = fromB.map((snapshotId) =>
      fork(b, snapshotId, HEAVY).then((res) => {
        bDone++;
        return res.output?.finishReason;
      }),
    );
    // A's calls, one after another: a light fork and a plain turn, three times.
    const bDoneAtA: number[] = [];
    for (let i = 0; i < 3; i++) {
      expect((await fork(a, fromA[i]!, LIGHT)).output?.finishReason).toBe(FinishReason.STOP);
      const turn = await a.run({ init: { agent: "ledger-notes" }, input: textInput(`light ${i}`) });
      expect(turn.output?.finishReason).toBe(FinishReason.STOP);
      bDoneAtA.push(bDone);
    }
    const outcomes = await Promise.all(flood);
    console.log(`B's heavy forks completed when each pair of A's calls had: ${bDoneAtA.join(", ")} of ${FLOOD}`);
    // Every fork of B is served too (fair, not refused).
    expect(outcomes.every((reason) => reason === FinishReason.STOP)).toBe(true);
    // A's six calls finished while at least half of B's flood was still waiting.
    expect(bDoneAtA.at(-1)!).toBeLessThanOrEqual(FLOOD / 2);
  });
});
