import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BusyPolicy, type AgentOutput, type AgentStreamChunk } from "../../gen/ts/agentd/v1/agent_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sessionWrittenAt, untilQueued } from "../harness/busy-session.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { attachToEnd, chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

describe.each(Object.keys(sharedStores))("two processes sharing a %s store", (kind) => {
  let shared: SharedStore;
  let a: AgentdProcess;
  let b: AgentdProcess;
  beforeAll(async () => {
    shared = await sharedStores[kind]!();
    [a, b] = await Promise.all([
      startAgentd({ args: ["--store", shared.uri] }),
      startAgentd({ args: ["--store", shared.uri] }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await shared?.stop();
  });

  /** A running watch on `server`: `first` resolves with the first status, `all` with every status until the stream ends. */
  function watching(
    server: AgentdProcess,
    snapshotId: string,
  ): { first: Promise<SnapshotStatus>; all: Promise<SnapshotStatus[]> } {
    let sawFirst!: (status: SnapshotStatus) => void;
    const first = new Promise<SnapshotStatus>((resolve) => (sawFirst = resolve));
    const all = (async () => {
      const statuses: SnapshotStatus[] = [];
      for await (const res of agentServiceClient(server.baseUrl, "grpc").watchSnapshot({
        agent: "assistant",
        snapshotId,
      })) {
        statuses.push(res.status);
        if (statuses.length === 1) sawFirst(res.status);
      }
      return statuses;
    })();
    return { first, all };
  }

  function watch(server: AgentdProcess, snapshotId: string): Promise<SnapshotStatus[]> {
    return watching(server, snapshotId).all;
  }

  it("an Abort on B stops work detached on A", async () => {
    const chat = new WireChat(agentServiceClient(a.baseUrl, "grpc"), {
      init: { agent: "assistant" },
      input: textInput("a long reply that takes a while to stream", { echoDelayMs: 150 }),
    });
    chat.send({ input: { ...textInput("queued behind it", { echoDelayMs: 150 }), detach: true } });
    const { output } = await chat.drain();
    const watch = watching(b, output.snapshotId);
    expect(await watch.first).toBe(SnapshotStatus.PENDING); // the watch is open before the abort is sent
    const res = await agentServiceClient(b.baseUrl, "grpc").abort({
      agent: "assistant",
      snapshotId: output.snapshotId,
    });
    expect(res.status).toBe(SnapshotStatus.ABORTED);
    expect(await watch.all).toEqual([SnapshotStatus.PENDING, SnapshotStatus.ABORTED]);
    // A observed the abort and stopped: its finalizer recorded the state it had, without the queued turn.
    const finished = await a.logLine(
      (l) => l.msg === "background work finished" && l.snapshotId === output.snapshotId,
      15_000,
    );
    expect(finished.status).toBe("aborted");
    const row = (
      await agentServiceClient(b.baseUrl, "grpc").getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })
    ).snapshot!;
    expect(row.status).toBe(SnapshotStatus.ABORTED);
    const texts = (row.state?.messages ?? []).map((m) =>
      m.content[0]?.kind.case === "text" ? m.content[0].kind.value : "",
    );
    expect(texts).not.toContain("echo: queued behind it");
  });

  it("a client attached to detached work on A drops its connection and re-attaches on B after its last sequence: every later chunk once, in order, then the output", async () => {
    const words = "one two three four five six seven eight nine ten eleven twelve";
    const { output } = (await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput(words, { echoDelayMs: 60 }), detach: true },
    })) as { output: AgentOutput };
    expect(output.finishReason).toBe(FinishReason.DETACHED);
    const onA = new AbortController();
    const seenOnA: AgentStreamChunk[] = [];
    const droppedOnA = (async () => {
      const stream = agentServiceClient(a.baseUrl, "grpc").attachInvocation(
        { agent: "assistant", snapshotId: output.snapshotId },
        { signal: onA.signal },
      );
      for await (const res of stream) {
        if (res.chunk) seenOnA.push(res.chunk);
        if (seenOnA.length === 3) onA.abort(); // the connection drops mid-stream
      }
    })().catch((e) => ConnectError.from(e));
    expect((await droppedOnA)?.code).toBe(Code.Canceled);
    const last = seenOnA.at(-1)!.sequence;
    const { chunks: seenOnB, output: ended } = await attachToEnd(agentServiceClient(b.baseUrl, "grpc"), {
      agent: "assistant",
      snapshotId: output.snapshotId,
      afterSequence: last,
    });
    const sequences = [...seenOnA, ...seenOnB].map((c) => c.sequence);
    const first = sequences[0]!;
    expect(sequences).toEqual(sequences.map((_, i) => first + i)); // consecutive: nothing lost, nothing twice
    expect(seenOnB[0]!.sequence).toBe(last + 1);
    expect(first).toBe(1); // the whole turn ran detached: its stream starts at 1
    expect(chunksText([...seenOnA, ...seenOnB])).toBe(`echo: ${words}`);
    expect(seenOnB.at(-1)?.turnEnd?.finishReason).toBe(FinishReason.STOP);
    expect(ended?.finishReason).toBe(FinishReason.STOP);
    expect(ended?.snapshotId).toBe(output.snapshotId);
    expect(ended?.message?.content[0]?.kind.value).toBe(`echo: ${words}`);
  });

  it("WatchSnapshot on B sees A's background work complete", async () => {
    const { output } = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("finish me", { echoDelayMs: 200 }), detach: true },
    });
    expect(await watch(b, output!.snapshotId)).toEqual([SnapshotStatus.PENDING, SnapshotStatus.COMPLETED]);
    const latest = await agentServiceClient(b.baseUrl, "grpc").getSnapshot({
      agent: "assistant",
      sessionId: output!.sessionId,
    });
    expect(latest.snapshot?.snapshotId).toBe(output!.snapshotId);
  });

  it("B resumes a session A started", async () => {
    const first = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: textInput("on A"),
    });
    const second = await agentServiceClient(b.baseUrl, "grpc").run({
      init: { agent: "assistant", sessionId: first.output!.sessionId },
      input: textInput("on B"),
    });
    const snap = await agentServiceClient(a.baseUrl, "grpc").getSnapshot({
      agent: "assistant",
      sessionId: first.output!.sessionId,
    });
    expect(snap.snapshot?.snapshotId).toBe(second.output!.snapshotId);
    expect(snap.snapshot?.state?.messages).toHaveLength(4);
  });

  it("REJECT on B names A's running Chat; ENQUEUE on B runs once A's Chat closes", async () => {
    const chat = new WireChat(agentServiceClient(a.baseUrl, "grpc"), {
      init: { agent: "assistant" },
      input: textInput("held on A"),
    });
    const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
    const onB = agentServiceClient(b.baseUrl, "grpc");
    const rejected = await onB
      .run({ init: { agent: "assistant", sessionId }, input: textInput("no") })
      .catch((e) => ConnectError.from(e));
    expect((rejected as ConnectError).code).toBe(Code.Aborted);
    const writtenAt = await sessionWrittenAt(onB, sessionId);
    const queued = onB.run({
      init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.ENQUEUE },
      input: textInput("after A"),
    });
    await untilQueued(onB, sessionId, writtenAt); // B's call waits in line while A's Chat holds the session
    await chat.finish();
    const { output } = await queued;
    const snap = await onB.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
    expect(snapshotTexts(snap.snapshot)).toEqual(["held on A", "echo: held on A", "after A", "echo: after A"]);
  });

  it("INTERRUPT on B takes the session from A's Chat: A's next turn is refused with ABORTED and never written", async () => {
    const chat = new WireChat(agentServiceClient(a.baseUrl, "grpc"), {
      init: { agent: "assistant" },
      input: textInput("on A"),
    });
    const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
    const onB = agentServiceClient(b.baseUrl, "grpc");
    const taken = await onB.run({
      init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.INTERRUPT },
      input: textInput("on B"),
    });
    chat.sendText("A again"); // A learns it lost the session when it commits this turn
    const ended = await chat.drain().then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(ended?.code).toBe(Code.Aborted);
    const head = await onB.getSnapshot({ agent: "assistant", sessionId });
    expect(head.snapshot?.snapshotId).toBe(taken.output!.snapshotId);
    expect(snapshotTexts(head.snapshot)).toEqual(["on A", "echo: on A", "on B", "echo: on B"]);
    const all = await onB.listSnapshots({ agent: "assistant", sessionId, includeState: true });
    expect(all.snapshots.flatMap((s) => snapshotTexts(s))).not.toContain("A again");
  });
});
