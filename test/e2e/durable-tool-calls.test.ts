// Durable tool calls (issue 52) with real processes: detached work of a prompt agent whose tools
// have their effects through a recorder (a small HTTP service honouring idempotency keys); the
// instance running it is SIGKILLed while a tool call is in flight, once its sibling's result is
// journaled; a second instance on the same store (SQLite file, MongoDB) takes the work over.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { agentInputToWire } from "../../src/protocol/index.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { toolCallEntryOf } from "../../src/tools/tool-call-journal.js";
import type { Message } from "../../src/types/content.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { startEffectRecorder, type EffectRecorder } from "../harness/effect-recorder.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { until } from "../harness/until.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

/** A row silent for 3 s is presumed dead; a heartbeat every 100 ms keeps a live (loaded) instance's row fresh. */
const LIVENESS = ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "3000"];
/** Generous deadlines for a takeover on a loaded machine: a safety net only. */
const TAKEOVER_WAIT = { timeoutMs: 60_000 };
vi.setConfig({ testTimeout: 120_000 });

describe.each(["sqlite", "mongodb"])("durable tool calls on a %s store", (kind) => {
  let shared: SharedStore;
  let store: SessionStore;
  let recorder: EffectRecorder;
  let b: AgentdProcess;
  const doomed: AgentdProcess[] = [];

  function instance(id: string): Promise<AgentdProcess> {
    return startAgentd({
      args: ["test/fixtures/durable-tool-agents.ts", "--store", shared.uri, ...LIVENESS, "--instance-id", id],
      env: { RECORDER_URL: recorder.url },
    });
  }

  beforeAll(async () => {
    shared = await sharedStores[kind]!();
    recorder = await startEffectRecorder();
    b = await instance("B");
    store = await openStoreFromUri(shared.uri);
  });
  afterAll(async () => {
    await Promise.all([...doomed.map((a) => a.stop("SIGKILL")), b?.stop()]);
    await store?.close?.();
    await recorder?.close();
    await shared?.stop();
  });

  /** The model message of the row's state that requested the tools. */
  async function requestMessage(snapshotId: string): Promise<Message | undefined> {
    const row = await store.getRecord(snapshotId);
    const state = row && (await loadRecordState(store, row));
    return state?.messages.find((m) => m.role === "model" && m.content.some((p) => p.toolRequest));
  }

  /** The journal entry of tool `tool`'s request in `message`. */
  function entryOf(message: Message | undefined, tool: string) {
    return toolCallEntryOf(message?.content.find((p) => p.toolRequest?.name === tool));
  }

  /**
   * Detaches `text` on a new instance A with the recorder holding `held`'s call (applied, never
   * answered); once the recorder has seen that call and `note`'s result is journaled in the
   * row, SIGKILLs A. Resolves to the row's session and snapshot IDs and A's PID.
   */
  async function killMidCall(text: string, held: string) {
    const a = await instance(`A-${doomed.length}`);
    doomed.push(a);
    recorder.holdNext.add(held);
    const { output } = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "courier" },
      input: { ...textInput(text), detach: true },
    });
    expect(output!.finishReason).toBe(FinishReason.DETACHED);
    const snapshotId = output!.snapshotId;
    await until("A's held call to reach the recorder", () => !recorder.holdNext.has(held), TAKEOVER_WAIT);
    await until(
      "note's result to be journaled in the row",
      async () => entryOf(await requestMessage(snapshotId), "note")?.endedAt !== undefined,
      TAKEOVER_WAIT,
    );
    await a.stop("SIGKILL");
    return { sessionId: output!.sessionId, snapshotId, pidA: a.proc.pid! };
  }

  async function finished(snapshotId: string) {
    return until(
      "B to finish the work",
      async () => {
        const row = await store.getRecord(snapshotId);
        return row?.status === "completed" && row;
      },
      TAKEOVER_WAIT,
    );
  }

  it("an effect tool cut mid-call: B replays the journaled call, re-invokes the cut one with the same key, and every key's effect is applied once", async () => {
    const { snapshotId, pidA } = await killMidCall("note ship", "ship");
    const row = await finished(snapshotId);
    expect(row.finishReason).toBe("stop");
    const state = await loadRecordState(store, row);
    const request = state!.messages.find((m) => m.role === "model" && m.content.some((p) => p.toolRequest))!;
    const note = entryOf(request, "note")!;
    const ship = entryOf(request, "ship")!;
    expect(note).toMatchObject({ outcome: "replayed", endedAt: expect.any(Number) });
    expect(ship).toMatchObject({ outcome: "ran", endedAt: expect.any(Number) });
    const seen = (key: string) => recorder.requests.filter((r) => r.key === key).map((r) => r.pid);
    expect(seen(note.key)).toEqual([pidA]); // replayed: not sent again
    expect(seen(ship.key)).toEqual([pidA, b.proc.pid]); // re-invoked with the same key
    expect([recorder.applied.get(note.key), recorder.applied.get(ship.key)]).toEqual([1, 1]);
    // The model got A's note result from the journal and the recorder's first answer for ship.
    const answer = state!.messages.at(-1)!.content[0]!.text!;
    expect(answer).toMatch(new RegExp(`^note=\\{"tool":"note","applied":\\d+,"by":${pidA}\\} ship=`));
    expect(answer).toContain(`"tool":"ship"`);
    expect(answer).toContain(`"by":${pidA}}`);
  });

  it("a never-repeat tool cut mid-call is not re-invoked: the work ends interrupted with neverRepeat.key, and a restart runs it with the same key", async () => {
    const { sessionId, snapshotId, pidA } = await killMidCall("note charge", "charge");
    const row = await finished(snapshotId);
    expect(row.finishReason).toBe("interrupted");
    const state = await loadRecordState(store, row);
    const pending = state!.messages.at(-1)!;
    const charge = pending.content.find((p) => p.toolRequest?.name === "charge")!;
    const key = toolCallEntryOf(charge)!.key;
    expect(recorder.requests.filter((r) => r.key === key).map((r) => r.pid)).toEqual([pidA]);
    expect(charge.metadata?.["interrupt"]).toEqual({
      neverRepeat: { key, tool: "charge", startedAt: expect.any(Number) },
    });
    expect(entryOf(pending, "note")).toMatchObject({ outcome: "replayed" });

    const { output } = await agentServiceClient(b.baseUrl, "grpc").run({
      init: { agent: "courier", sessionId },
      input: agentInputToWire({ resume: { restart: [{ toolRequest: { name: "charge" } }] } }),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    expect(recorder.requests.filter((r) => r.key === key).map((r) => r.pid)).toEqual([pidA, b.proc.pid]);
    expect(recorder.applied.get(key)).toBe(1);
    const { snapshot } = await agentServiceClient(b.baseUrl, "grpc").getSnapshot({
      agent: "courier",
      snapshotId: output!.snapshotId,
    });
    expect(snapshot?.status).toBe(SnapshotStatus.COMPLETED);
  });
});
