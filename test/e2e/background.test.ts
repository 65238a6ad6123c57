import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { snapshotTexts, useAgentd } from "../harness/use-agentd.js";
import { textInput, WireChat } from "../harness/wire-chat.js";

const agentd = useAgentd({
  args: ["test/fixtures/agents.ts", "--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", "2000"],
});

// Slow enough that a watch started right after detach still sees the row pending, even on a loaded machine.
const slow = (text: string, ms = 150) => textInput(text, { echoDelayMs: ms });

/** Every status WatchSnapshot reports for `snapshotId`, until it ends. */
/**
 * Starts WatchSnapshot: `statuses` resolves with every status once the stream
 * ends; `started` resolves once the first status arrived (the server has read
 * the row), so a change made after it is reported as a change.
 */
function startWatch(
  agent: string,
  snapshotId: string,
): { started: Promise<void>; statuses: Promise<SnapshotStatus[]> } {
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const statuses = (async () => {
    const seen: SnapshotStatus[] = [];
    try {
      for await (const res of agentd.client.watchSnapshot({ agent, snapshotId })) {
        seen.push(res.status);
        markStarted();
      }
    } finally {
      markStarted();
    }
    return seen;
  })();
  return { started, statuses };
}

async function watch(agent: string, snapshotId: string): Promise<SnapshotStatus[]> {
  return startWatch(agent, snapshotId).statuses;
}

describe("detach", () => {
  it("returns a pending snapshot at once and finishes in-flight and queued inputs in the background", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "assistant" }, input: slow("one") });
    chat.send({ input: slow("two") });
    chat.send({ input: { ...slow("three"), detach: true } });
    const { output } = await chat.drain();
    expect(output.finishReason).toBe(FinishReason.DETACHED);
    const pending = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId });
    expect(pending.snapshot?.status).toBe(SnapshotStatus.PENDING);

    expect(await watch("assistant", output.snapshotId)).toEqual([SnapshotStatus.PENDING, SnapshotStatus.COMPLETED]);
    const done = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId });
    expect(snapshotTexts(done.snapshot)).toEqual(["one", "echo: one", "two", "echo: two", "three", "echo: three"]);
    expect(done.snapshot?.turnIndex).toBe(2);
  });

  it("after earlier turns chains off the last snapshot and continues the turn index", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "assistant" }, input: textInput("first") });
    const first = await chat.nextTurn();
    chat.send({ input: { ...slow("second"), detach: true } });
    const { output } = await chat.drain();
    const pending = (await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })).snapshot!;
    expect(pending.parentId).toBe(first.turnEnd.snapshotId);
    expect(pending.turnIndex).toBe(1);
    await watch("assistant", output.snapshotId);
    const latest = (await agentd.client.getSnapshot({ agent: "assistant", sessionId: output.sessionId })).snapshot!;
    expect(latest.snapshotId).toBe(output.snapshotId);
    expect(latest.status).toBe(SnapshotStatus.COMPLETED);
    expect(snapshotTexts(latest)).toEqual(["first", "echo: first", "second", "echo: second"]);
  });

  it("is refused on a store without status subscription and on a client-managed agent", async () => {
    for (const agent of ["no-subscribe", "notes"]) {
      const err = await agentd.client
        .run({ init: { agent }, input: { ...textInput("x"), detach: true } })
        .catch((e) => e);
      expect(ConnectError.from(err).code).toBe(Code.FailedPrecondition);
    }
  });

  it("Abort and WatchSnapshot are refused with FAILED_PRECONDITION on a store that cannot push status changes", async () => {
    const { output } = await agentd.client.run({ init: { agent: "no-subscribe" }, input: textInput("x") });
    const abort = await agentd.client
      .abort({ agent: "no-subscribe", snapshotId: output!.snapshotId })
      .catch((e) => ConnectError.from(e));
    expect((abort as ConnectError).code).toBe(Code.FailedPrecondition);
    const watch = (async () => {
      for await (const _ of agentd.client.watchSnapshot({ agent: "no-subscribe", snapshotId: output!.snapshotId }))
        void _;
    })().catch((e) => ConnectError.from(e));
    expect(((await watch) as ConnectError).code).toBe(Code.FailedPrecondition);
  });

  it("records a failing turn after detach as failed with its error", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "flaky" }, input: slow("ok") });
    chat.send({ input: { ...textInput("now fail"), detach: true } });
    const { output } = await chat.drain();
    expect(await watch("flaky", output.snapshotId)).toEqual([SnapshotStatus.PENDING, SnapshotStatus.FAILED]);
    const row = (await agentd.client.getSnapshot({ agent: "flaky", snapshotId: output.snapshotId })).snapshot!;
    expect(row.error?.status).toBe("INTERNAL");
    expect(row.error?.message).toBe("flaky agent failed on purpose");
    expect(snapshotTexts(row)).toEqual(["ok", "echo: ok"]);
    const resumed = await agentd.client
      .run({ init: { agent: "flaky", snapshotId: output.snapshotId }, input: textInput("x") })
      .catch((e) => e);
    expect(ConnectError.from(resumed).code).toBe(Code.FailedPrecondition);
  });

  it("cannot be resumed while pending, but can once completed", async () => {
    const { output } = await agentd.client.run({
      init: { agent: "assistant" },
      input: { ...slow("bg"), detach: true },
    });
    const early = await agentd.client
      .run({ init: { agent: "assistant", snapshotId: output!.snapshotId }, input: textInput("x") })
      .catch((e) => e);
    expect(ConnectError.from(early).code).toBe(Code.FailedPrecondition);
    await watch("assistant", output!.snapshotId);
    const later = await agentd.client.run({
      init: { agent: "assistant", snapshotId: output!.snapshotId },
      input: textInput("after"),
    });
    expect(later.output?.finishReason).toBe(FinishReason.STOP);
  });
});

describe("abort", () => {
  it("stops detached work and the row ends aborted", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "assistant" },
      input: slow("long running reply with many words", 200),
    });
    chat.send({ input: { ...slow("queued", 200), detach: true } });
    const { output } = await chat.drain();
    const watching = startWatch("assistant", output.snapshotId);
    await watching.started; // the abort must come after the watch's first read, or PENDING is never seen
    const aborted = await agentd.client.abort({ agent: "assistant", snapshotId: output.snapshotId });
    expect(aborted).toMatchObject({ snapshotId: output.snapshotId, status: SnapshotStatus.ABORTED });
    expect(await watching.statuses).toEqual([SnapshotStatus.PENDING, SnapshotStatus.ABORTED]);
    const resumed = await agentd.client
      .run({ init: { agent: "assistant", snapshotId: output.snapshotId }, input: textInput("x") })
      .catch((e) => e);
    expect(ConnectError.from(resumed).code).toBe(Code.FailedPrecondition);
    // The work saw the abort and stopped: its finalizer wrote the row without the queued turn.
    const finished = await agentd.server.logLine(
      (l) => l.msg === "background work finished" && l.snapshotId === output.snapshotId,
    );
    expect(finished.status).toBe("aborted");
    const row = (await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })).snapshot!;
    expect(row.status).toBe(SnapshotStatus.ABORTED);
    expect(snapshotTexts(row)).not.toContain("echo: queued");
  });

  it("ends the stopped turn ABORTED everywhere: its recorded TurnEnd, the attached output and the turn log line", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "assistant" },
      input: { ...slow("a long reply the abort cuts short in the middle of its words", 300), detach: true },
    });
    const { output } = await chat.drain();
    await new Promise((r) => setTimeout(r, 600)); // a few words into the turn
    await agentd.client.abort({ agent: "assistant", snapshotId: output.snapshotId });
    await agentd.server.logLine((l) => l.msg === "background work finished" && l.snapshotId === output.snapshotId);
    const seen: { turnEnd?: FinishReason; output?: FinishReason }[] = [];
    for await (const res of agentd.client.attachInvocation({ agent: "assistant", snapshotId: output.snapshotId })) {
      if (res.chunk?.turnEnd) seen.push({ turnEnd: res.chunk.turnEnd.finishReason });
      if (res.output) seen.push({ output: res.output.finishReason });
    }
    expect(seen).toEqual([{ turnEnd: FinishReason.ABORTED }, { output: FinishReason.ABORTED }]);
    const turnLine = await agentd.server.logLine(
      (l) => l.msg === "turn" && l.sessionId === output.sessionId && l.detached === true,
    );
    expect(turnLine.finishReason).toBe("aborted");
  });

  it("wins or loses a race with completion consistently: the row ends in the status Abort reported", async () => {
    for (let i = 0; i < 10; i++) {
      const { output } = await agentd.client.run({
        init: { agent: "assistant" },
        input: { ...slow("race", i % 3), detach: true },
      });
      const { status } = await agentd.client.abort({ agent: "assistant", snapshotId: output!.snapshotId });
      const statuses = await watch("assistant", output!.snapshotId);
      expect([SnapshotStatus.ABORTED, SnapshotStatus.COMPLETED]).toContain(status);
      expect(statuses.at(-1)).toBe(status);
    }
  });

  it("is a no-op on a terminal snapshot and reports its status", async () => {
    const { output } = await agentd.client.run({ init: { agent: "assistant" }, input: textInput("done") });
    const before = await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
    const res = await agentd.client.abort({ agent: "assistant", snapshotId: output!.snapshotId });
    expect(res.status).toBe(SnapshotStatus.COMPLETED);
    expect((await agentd.client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId })).snapshot).toEqual(
      before.snapshot,
    );
  });

  it("of an unknown snapshot is NOT_FOUND", async () => {
    const err = await agentd.client.abort({ agent: "assistant", snapshotId: "missing" }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.NotFound);
  });
});

describe("client disconnect", () => {
  it("before detach cancels the work and writes no snapshot", async () => {
    const { output } = await agentd.client.run({ init: { agent: "assistant" }, input: textInput("base") });
    const controller = new AbortController();
    const chat = new WireChat(
      agentd.client,
      { init: { agent: "assistant", sessionId: output!.sessionId }, input: slow("never finishes", 150) },
      { signal: controller.signal },
    );
    await chat.nextChunk(); // the turn is running
    controller.abort();
    // The server ended the call and its turn failed (cancelled) without a commit.
    const sessionId = output!.sessionId;
    const chatLine = (l: Record<string, unknown>) => l.msg === "rpc" && l.procedure === "/agentd.v1.AgentService/Chat";
    await agentd.server.logLine((l) => chatLine(l) && l.sessionId === sessionId);
    const turn = await agentd.server.logLine((l) => l.msg === "turn" && l.sessionId === sessionId && l.turnIndex === 1);
    expect(turn.finishReason).toBe("failed");
    const page = await agentd.client.listSnapshots({ agent: "assistant", sessionId: output!.sessionId });
    expect(page.snapshots.map((s) => s.snapshotId)).toEqual([output!.snapshotId]);
  });

  it("after detach changes nothing: the work completes", async () => {
    const controller = new AbortController();
    const chat = new WireChat(
      agentd.client,
      { init: { agent: "assistant" }, input: { ...slow("detached then gone", 50), detach: true } },
      { signal: controller.signal },
    );
    const { output } = await chat.drain();
    controller.abort();
    expect((await watch("assistant", output.snapshotId)).at(-1)).toBe(SnapshotStatus.COMPLETED);
  });
});
