// Durable tool calls across a client's retry (issue 52) with real processes: a turn (not detached)
// whose first tool round completed and was journaled in the store under the turn's request ID is cut
// by SIGKILL while its second round's tool call is in flight; the client retries the same request
// ID against the restarted instance, which replays the journaled result instead of calling the tool
// again. On an SQLite file and on MongoDB.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { toolCallEntryOf } from "../../src/tools/tool-call-journal.js";
import type { Message } from "../../src/types/content.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import type { ToolResultJournal } from "../../stores/tool-result-journal.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startEffectRecorder, type EffectRecorder } from "../harness/effect-recorder.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

vi.setConfig({ testTimeout: 120_000 });
const WAIT = { timeoutMs: 60_000 };

describe.each(["sqlite", "mongodb"])("a client's retry of a turn cut after its tool ran, on a %s store", (kind) => {
  let shared: SharedStore;
  let store: SessionStore & ToolResultJournal;
  let recorder: EffectRecorder;
  const started: AgentdProcess[] = [];

  /** Instance "A" (a restart under the same name frees its predecessor's session leases at once). */
  async function instanceA(): Promise<AgentdProcess> {
    const a = await startAgentd({
      args: ["test/fixtures/durable-tool-agents.ts", "--store", shared.uri, "--instance-id", "A"],
      env: { RECORDER_URL: recorder.url },
    });
    started.push(a);
    return a;
  }

  beforeAll(async () => {
    shared = await sharedStores[kind]!();
    recorder = await startEffectRecorder();
    store = (await openStoreFromUri(shared.uri)) as SessionStore & ToolResultJournal;
  });
  afterAll(async () => {
    await Promise.all(started.map((a) => a.stop("SIGKILL")));
    await store?.close?.();
    await recorder?.close();
    await shared?.stop();
  });

  /** The request part of tool `tool` in the model message of `messages` that requested it. */
  function requestOf(messages: readonly Message[], tool: string) {
    for (const m of messages) {
      const part = m.role === "model" ? m.content.find((p) => p.toolRequest?.name === tool) : undefined;
      if (part) return part;
    }
    return undefined;
  }

  it("replays the first round's journaled result after SIGKILL and restart; re-invokes the cut call with its key; the journal goes once committed", async () => {
    let a = await instanceA();
    const first = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "courier" },
      input: textInput("note"),
    });
    const sessionId = first.output!.sessionId;
    const requestId = `retry-${kind}`;
    const input = { ...textInput("note | ship"), requestId };
    const scope = { sessionId, requestId };

    recorder.holdNext.add("ship");
    const pidA = a.proc.pid!;
    const cut = agentServiceClient(a.baseUrl, "grpc")
      .run({ init: { agent: "courier", sessionId }, input })
      .then(
        () => "answered",
        () => "failed",
      );
    await until("A's ship call to reach the recorder", () => !recorder.holdNext.has("ship"), WAIT);
    const journaled = (await store.journaledToolCalls(scope)).filter((c) => c.tool !== "agentd.input");
    expect(journaled.map((c) => [c.tool, c.endedAt !== undefined])).toEqual([["note", true]]);
    await a.stop("SIGKILL");
    expect(await cut).toBe("failed");

    a = await instanceA();
    const { output } = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "courier", sessionId },
      input,
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    const row = await store.getRecord(output!.snapshotId);
    const { messages } = (await loadRecordState(store, row!))!;
    const turn = messages.slice(messages.findLastIndex((m) => m.role === "user"));
    const note = toolCallEntryOf(requestOf(turn, "note"))!;
    const ship = toolCallEntryOf(requestOf(turn, "ship"))!;
    expect(note).toMatchObject({ key: journaled[0]!.key, outcome: "replayed" });
    expect(ship).toMatchObject({ outcome: "ran" });
    const senders = (key: string) => recorder.requests.filter((r) => r.key === key).map((r) => r.pid);
    expect(senders(note.key)).toEqual([pidA]); // replayed from the journal: not sent again
    expect(senders(ship.key)).toEqual([pidA, a.proc.pid]); // re-invoked with the same key, applied once
    expect(recorder.applied.get(ship.key)).toBe(1);
    // The model was given A's note result from the journal.
    expect(messages.at(-1)!.content[0]!.text).toMatch(
      new RegExp(`^ship=\\{"tool":"ship","applied":\\d+,"by":${pidA}\\}$`),
    );
    expect(JSON.stringify(turn[2]!.content[0]!.toolResponse?.output)).toContain(`"by":${pidA}`);
    expect(await store.journaledToolCalls(scope)).toEqual([]);
  });
});
