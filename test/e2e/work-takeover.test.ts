import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import type { AgentStreamChunk } from "../../gen/ts/agentd/v1/agent_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { loadRecordState } from "../../src/runtime/sessions/session-lookup.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { until } from "../harness/until.js";
import { Role } from "../../gen/ts/agentd/v1/content_pb.js";
import { attachToEnd, chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

/**
 * A row silent for 3 s is presumed dead; the survivors look every 750 ms. A heartbeat every 100 ms:
 * a live instance on a loaded machine (timers late by a second or more) is not taken for dead.
 */
const LIVENESS = ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "3000"];

/** Generous deadlines for a takeover (TTL, then the survivors' look) on a loaded machine: a safety net only. */
const TAKEOVER_WAIT = { timeoutMs: 60_000 };
vi.setConfig({ testTimeout: 120_000 });

const TOOK_OVER = "took over the detached work of a dead instance";

describe.each(Object.keys(sharedStores))("detached work on a %s store survives the instance running it", (kind) => {
  let shared: SharedStore;
  let stampLog: string;
  let b: AgentdProcess;
  let c: AgentdProcess;
  const doomed: AgentdProcess[] = [];
  /** A server on the shared store (the example agents and `stamper`); `answerDelayMs`: how long stamper's model takes after its tool round. */
  function instance(id: string, answerDelayMs: number): Promise<AgentdProcess> {
    return startAgentd({
      args: ["test/fixtures/takeover-agents.ts", "--examples", "--store", shared.uri, ...LIVENESS, "--instance-id", id],
      env: { STAMP_LOG: stampLog, STAMPER_ANSWER_DELAY_MS: String(answerDelayMs) },
    });
  }
  /** The instance each test kills: it runs the detached work first. */
  async function startDoomed(): Promise<AgentdProcess> {
    const a = await instance("A", 60_000);
    doomed.push(a);
    return a;
  }
  beforeAll(async () => {
    shared = await sharedStores[kind]!();
    stampLog = join(await mkdtemp(join(tmpdir(), "agentd-stamps-")), "stamps.log");
    [b, c] = await Promise.all([instance("B", 50), instance("C", 50)]);
  });
  afterAll(async () => {
    await Promise.all([...doomed.map((a) => a.stop("SIGKILL")), b?.stop(), c?.stop()]);
    await shared?.stop();
  });

  it("A is killed during a detached run of 3 queued inputs: exactly one survivor takes it over, the row completes with all 3 turns once each, and a client re-attaching on B gets every later chunk once, in order, ending with the output", async () => {
    const a = await startDoomed();
    const long = "one two three four five six seven eight nine ten eleven twelve";
    const chat = new WireChat(agentServiceClient(a.baseUrl, "grpc"), {
      init: { agent: "assistant" },
      input: textInput("alpha beta", { echoDelayMs: 20 }),
    });
    chat.send({ input: textInput(long, { echoDelayMs: 150 }) });
    chat.send({ input: { ...textInput("the last one", { echoDelayMs: 20 }), detach: true } });
    const { output } = await chat.drain();
    expect(output.finishReason).toBe(FinishReason.DETACHED);

    // Follow the work on A until its second turn is streaming, then kill A.
    const seenOnA: AgentStreamChunk[] = [];
    const onA = (async () => {
      for await (const res of agentServiceClient(a.baseUrl, "grpc").attachInvocation({
        agent: "assistant",
        snapshotId: output.snapshotId,
      })) {
        if (!res.chunk) continue;
        seenOnA.push(res.chunk);
        const inSecondTurn = seenOnA.some((ch) => ch.turnEnd) && !seenOnA.at(-1)!.turnEnd;
        if (inSecondTurn && seenOnA.filter((ch) => ch.modelChunk).length >= 4) void a.stop("SIGKILL");
      }
    })().catch((e: unknown) => ConnectError.from(e));
    expect(await onA).toBeInstanceOf(ConnectError); // the connection died with A
    const last = seenOnA.at(-1)!.sequence;
    const firstTurnEnd = seenOnA.find((ch) => ch.turnEnd)!;
    expect(firstTurnEnd.turnEnd?.turnIndex).toBe(0);

    const { chunks: seenOnB, output: ended } = await attachToEnd(agentServiceClient(b.baseUrl, "grpc"), {
      agent: "assistant",
      snapshotId: output.snapshotId,
      afterSequence: last,
    });
    const sequences = [...seenOnA, ...seenOnB].map((ch) => ch.sequence);
    expect(sequences).toEqual(sequences.map((_, i) => sequences[0]! + i)); // nothing lost, nothing twice
    expect(seenOnB[0]!.sequence).toBe(last + 1);

    // The takeover marker supersedes what A streamed of the cut turn; the turn then restarts from its start.
    const markerAt = seenOnB.findIndex((ch) => ch.takeover);
    expect(seenOnB.filter((ch) => ch.takeover)).toHaveLength(1);
    expect(seenOnB[markerAt]!.takeover).toMatchObject({ supersededAfter: firstTurnEnd.sequence, turnIndex: 1 });
    const afterMarker = seenOnB.slice(markerAt + 1);
    expect(
      afterMarker.filter((ch) => ch.turnEnd).map((ch) => [ch.turnEnd!.turnIndex, ch.turnEnd!.finishReason]),
    ).toEqual([
      [1, FinishReason.STOP],
      [2, FinishReason.STOP],
    ]);
    const restarted = afterMarker.slice(
      0,
      afterMarker.findIndex((ch) => ch.turnEnd),
    );
    expect(chunksText(restarted)).toBe(`echo: ${long}`);
    expect(ended?.finishReason).toBe(FinishReason.STOP);
    expect(ended?.snapshotId).toBe(output.snapshotId);
    expect(ended?.message?.content[0]?.kind.value).toBe("echo: the last one");

    const snapshot = await agentServiceClient(c.baseUrl, "grpc").getSnapshot({
      agent: "assistant",
      snapshotId: output.snapshotId,
    });
    expect(snapshot.snapshot?.status).toBe(SnapshotStatus.COMPLETED);
    expect(snapshotTexts(snapshot.snapshot)).toEqual([
      "alpha beta",
      "echo: alpha beta",
      long,
      `echo: ${long}`,
      "the last one",
      "echo: the last one",
    ]);

    // Exactly one survivor took it over, and the row records who ran which part.
    const isTakeover = (line: Record<string, unknown>) =>
      line.msg === TOOK_OVER && line.snapshotId === output.snapshotId;
    // Info lines go out in batches: wait until the survivor's line is written, then check there is one.
    await until("the survivor's takeover line", () => [...b.logLines(), ...c.logLines()].some(isTakeover));
    const takeovers = [...b.logLines(), ...c.logLines()].filter(isTakeover);
    expect(takeovers).toEqual([
      expect.objectContaining({ from: "A", snapshotId: output.snapshotId, completedInputs: 1, remainingInputs: 2 }),
    ]);
    const store = await openStoreFromUri(shared.uri);
    try {
      const row = await store.getRecord(output.snapshotId);
      expect(row?.work?.runs.map((run) => [run.instance, run.fromInput])).toEqual([
        ["A", 0],
        [takeovers[0]!.instance, 1],
      ]);
    } finally {
      await store.close?.();
    }
  });

  it("a tool-using turn killed after its first tool round resumes on a survivor without running that tool again", async () => {
    const a = await startDoomed();
    const { output } = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "stamper" },
      input: { ...textInput("stamp it"), detach: true },
    });
    expect(output!.finishReason).toBe(FinishReason.DETACHED);
    const store = await openStoreFromUri(shared.uri);
    try {
      // The tool's result is checkpointed; A's model then takes a minute to answer: kill it there.
      // (`inTurn` alone is not enough: a round with an effect tool is checkpointed before it runs.)
      await until(
        "A to checkpoint the tool round's result",
        async () => {
          const row = await store.getRecord(output!.snapshotId);
          if (row?.work?.inTurn !== true) return false;
          const state = await loadRecordState(store, row);
          return state?.messages.some((m) => m.role === "tool") === true;
        },
        TAKEOVER_WAIT,
      );
      await a.stop("SIGKILL");
      const done = await until(
        "a survivor to complete the work",
        async () => {
          const { snapshot } = await agentServiceClient(b.baseUrl, "grpc").getSnapshot({
            agent: "stamper",
            snapshotId: output!.snapshotId,
          });
          return snapshot?.status === SnapshotStatus.COMPLETED && snapshot;
        },
        TAKEOVER_WAIT,
      );
      expect((await readFile(stampLog, "utf8")).trim().split("\n")).toEqual([String(a.proc.pid)]);
      expect(done.state?.messages.map((m) => m.role)).toEqual([Role.USER, Role.MODEL, Role.TOOL, Role.MODEL]);
      expect(snapshotTexts(done).at(-1)).toBe("stamped");
      const row = await store.getRecord(output!.snapshotId);
      expect(row?.work?.runs.map((run) => [run.instance, run.fromInput])).toEqual([
        ["A", 0],
        [expect.stringMatching(/^[BC]$/), 0],
      ]);
    } finally {
      await store.close?.();
    }
  });
});
