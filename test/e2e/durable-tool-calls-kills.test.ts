// Durable tool calls under repeated SIGKILLs (issue 52): detached work of tool rounds with
// effect and never-repeat tools (test/fixtures/durable-tool-agents.ts), each run killed while one
// of its calls is in flight (the recorder holds it) after the round's other calls were journaled,
// at a different call and round each time, and taken over by a survivor on the same store.
// DURABLE_TOOL_KILLS kills per store (default 5; the target is 50+).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { toolCallEntryOf, type ToolCallEntry } from "../../src/tools/tool-call-journal.js";
import type { Message } from "../../src/types/content.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startEffectRecorder, type EffectRecorder } from "../harness/effect-recorder.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

const LIVENESS = ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "3000"];
const WAIT = { timeoutMs: 60_000 };
const KILLS = Number(process.env.DURABLE_TOOL_KILLS ?? 5);
vi.setConfig({ testTimeout: 60_000 + KILLS * 60_000 });

/** The work's tool rounds ("|" between rounds) and the call held in flight when its instance is killed. */
const SCENARIOS: { text: string; held: string }[] = [
  { text: "note ship | note charge", held: "ship" },
  { text: "note ship | note charge", held: "charge" },
  { text: "ship note charge", held: "ship" },
  { text: "note | ship note", held: "ship" },
  { text: "charge note | ship", held: "charge" },
];

/** The model messages of `messages` that requested tools, oldest first. */
function toolRounds(messages: readonly Message[]): Message[] {
  return messages.filter((m) => m.role === "model" && m.content.some((p) => p.toolRequest));
}

/** The journal entries of `message`'s tool requests, by tool. */
function entries(message: Message): Map<string, ToolCallEntry | undefined> {
  return new Map(
    message.content.filter((p) => p.toolRequest).map((p) => [p.toolRequest!.name, toolCallEntryOf(p)] as const),
  );
}

describe.each(["sqlite", "mongodb"])("tool-heavy detached work on a %s store", (kind) => {
  let shared: SharedStore;
  let store: SessionStore;
  let recorder: EffectRecorder;
  let survivor: AgentdProcess;
  const doomed: AgentdProcess[] = [];

  function instance(id: string): Promise<AgentdProcess> {
    return startAgentd({
      args: ["test/fixtures/durable-tool-agents.ts", "--store", shared.uri, ...LIVENESS, "--instance-id", id],
      env: { RECORDER_URL: recorder.url },
    });
  }

  async function rowState(snapshotId: string) {
    const row = await store.getRecord(snapshotId);
    return row && { row, state: await loadRecordState(store, row) };
  }

  beforeAll(async () => {
    shared = await sharedStores[kind]!();
    recorder = await startEffectRecorder();
    survivor = await instance("survivor");
    store = await openStoreFromUri(shared.uri);
  });
  afterAll(async () => {
    await Promise.all([...doomed.map((a) => a.stop("SIGKILL")), survivor?.stop()]);
    await store?.close?.();
    await recorder?.close();
    await shared?.stop();
  });

  it(`${KILLS} SIGKILLs mid-call: no effect twice per key, no never-repeat call re-invoked, every journaled result replayed`, async () => {
    for (let i = 0; i < KILLS; i++) {
      const { text, held } = SCENARIOS[i % SCENARIOS.length]!;
      const mark = recorder.requests.length;
      const a = await instance(`A${i}`);
      doomed.push(a);
      recorder.holdNext.add(held);
      const { output } = await agentServiceClient(a.baseUrl, "grpc").run({
        init: { agent: "courier" },
        input: { ...textInput(text), detach: true },
      });
      expect(output!.finishReason).toBe(FinishReason.DETACHED);
      const snapshotId = output!.snapshotId;
      await until(`kill ${i}: A's ${held} call to reach the recorder`, () => !recorder.holdNext.has(held), WAIT);
      // Every other call of the held call's round journaled: only the held one is in flight.
      const journaled = await until(
        `kill ${i}: the other calls of ${held}'s round to be journaled`,
        async () => {
          const round = toolRounds((await rowState(snapshotId))?.state?.messages ?? []).at(-1);
          const calls = round ? entries(round) : new Map<string, ToolCallEntry | undefined>();
          if (!calls.has(held)) return undefined;
          const others = [...calls].filter(([tool]) => tool !== held);
          return others.every(([, e]) => e?.endedAt !== undefined) && others.map(([tool]) => tool);
        },
        WAIT,
      );
      await a.stop("SIGKILL");
      const { row, state } = (await until(
        `kill ${i}: the survivor to finish the work`,
        async () => {
          const read = await rowState(snapshotId);
          return read?.row.status === "completed" && read;
        },
        WAIT,
      ))!;
      const neverRepeat = held === "charge";
      expect(row.finishReason).toBe(neverRepeat ? "interrupted" : "stop");

      const requests = recorder.requests.slice(mark);
      const rounds = toolRounds(state!.messages);
      const all = rounds.flatMap((m) => [...entries(m)]);
      // One key per call, kept across the takeover: the recorder saw no other key.
      expect(new Set(requests.map((r) => r.key))).toEqual(new Set(all.map(([, e]) => e!.key)));
      for (const [tool, entry] of all) {
        const senders = requests.filter((r) => r.key === entry!.key).map((r) => r.pid);
        if (tool === held && neverRepeat) expect(senders, `kill ${i}: ${tool}`).toEqual([a.proc.pid]);
        else if (tool === held) expect(senders, `kill ${i}: ${tool}`).toEqual([a.proc.pid, survivor.proc.pid]);
        else expect(senders, `kill ${i}: ${tool} ran once`).toHaveLength(1);
        expect(recorder.applied.get(entry!.key), `kill ${i}: ${tool} applied once`).toBe(1);
      }
      // The calls journaled before the kill were answered from the journal.
      const cutRound = entries(rounds.find((m) => entries(m).has(held))!);
      for (const tool of journaled) expect(cutRound.get(tool)?.outcome, `kill ${i}: ${tool}`).toBe("replayed");
    }
  });
});
