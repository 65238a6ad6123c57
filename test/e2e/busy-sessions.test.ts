import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BusyPolicy } from "../../gen/ts/agentd/v1/agent_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sessionWrittenAt, untilQueued } from "../harness/busy-session.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

let server: AgentdProcess;
let client: ReturnType<typeof agentServiceClient>;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
  client = agentServiceClient(server.baseUrl, "grpc");
});
afterAll(async () => {
  await server?.stop();
});

const CLIENTS = 5;
const TURNS = 10;

interface TurnOutcome {
  text: string;
  code: Code | "ok";
  /** The error message of an unexpected failure (shown when a test fails). */
  message?: string;
}

/** A session with one turn, its ID. */
async function newSession(): Promise<string> {
  const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("start") });
  return output!.sessionId;
}

/** `CLIENTS` callers each running `TURNS` Runs on one session under `policy`, concurrently; every outcome. */
async function hammer(sessionId: string, policy: BusyPolicy): Promise<TurnOutcome[][]> {
  return Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      const outcomes: TurnOutcome[] = [];
      for (let t = 0; t < TURNS; t++) {
        const text = `c${c}-t${t}`;
        try {
          const { output } = await client.run(
            { init: { agent: "assistant", sessionId, busyPolicy: policy }, input: textInput(text, { echoDelayMs: 2 }) },
            { timeoutMs: 60_000 },
          );
          outcomes.push({ text, code: output?.finishReason === FinishReason.STOP ? "ok" : Code.Unknown });
        } catch (err) {
          const e = ConnectError.from(err);
          outcomes.push({ text, code: e.code, ...(e.code !== Code.Aborted ? { message: e.rawMessage } : {}) });
        }
      }
      return outcomes;
    }),
  );
}

/** The user texts of the session's head snapshot, each checked to be followed by its echo (no half-written turn). */
async function committedTurns(sessionId: string): Promise<string[]> {
  const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId });
  const texts = snapshotTexts(snapshot);
  const users: string[] = [];
  for (let i = 0; i < texts.length; i += 2) {
    expect(texts[i + 1]).toBe(`echo: ${texts[i]}`);
    users.push(texts[i]!);
  }
  return users;
}

describe("busy sessions: 5 clients x 10 turns on one session", () => {
  it("REJECT: every acknowledged turn is in the history and every other call got ABORTED", async () => {
    const sessionId = await newSession();
    const outcomes = (await hammer(sessionId, BusyPolicy.REJECT)).flat();
    const ok = outcomes.filter((o) => o.code === "ok").map((o) => o.text);
    const rejected = outcomes.filter((o) => o.code !== "ok");
    expect(rejected.filter((o) => o.code !== Code.Aborted)).toEqual([]);
    expect(rejected.length).toBeGreaterThan(0);
    const history = await committedTurns(sessionId);
    expect(history.slice(1).sort()).toEqual([...ok].sort());
  });

  it("ENQUEUE: all 50 turns are in the history, each client's in its own order", async () => {
    const sessionId = await newSession();
    const outcomes = await hammer(sessionId, BusyPolicy.ENQUEUE);
    expect(outcomes.flat().every((o) => o.code === "ok")).toBe(true);
    const history = await committedTurns(sessionId);
    expect(history).toHaveLength(1 + CLIENTS * TURNS);
    for (let c = 0; c < CLIENTS; c++) {
      expect(history.filter((t) => t.startsWith(`c${c}-`))).toEqual(
        Array.from({ length: TURNS }, (_, t) => `c${c}-t${t}`),
      );
    }
  });

  it("INTERRUPT: interrupted calls end ABORTED, none of their turns is written, every acknowledged turn is kept", async () => {
    const sessionId = await newSession();
    const outcomes = (await hammer(sessionId, BusyPolicy.INTERRUPT)).flat();
    const ok = outcomes.filter((o) => o.code === "ok").map((o) => o.text);
    const interrupted = outcomes.filter((o) => o.code !== "ok");
    expect(interrupted.filter((o) => o.code !== Code.Aborted)).toEqual([]);
    expect(interrupted.length).toBeGreaterThan(0);
    const history = await committedTurns(sessionId);
    expect(history.slice(1).sort()).toEqual([...ok].sort());
  });
});

describe("busy sessions: one open Chat holds the session", () => {
  it("REJECT names the running invocation", async () => {
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("holder") });
    const first = await chat.nextTurn();
    const sessionId = first.turnEnd.sessionId;
    const err = await client
      .run({ init: { agent: "assistant", sessionId }, input: textInput("second") })
      .catch((e) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Aborted);
    expect((err as ConnectError).rawMessage).toMatch(/session ".+" is busy: invocation ".+" is running/);
    await chat.finish();
  });

  it("ENQUEUE waits for the Chat to close, then continues after its turns", async () => {
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("one") });
    const first = await chat.nextTurn();
    const sessionId = first.turnEnd.sessionId;
    const writtenAt = await sessionWrittenAt(client, sessionId);
    const queued = client.run({
      init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.ENQUEUE },
      input: textInput("after"),
    });
    await untilQueued(client, sessionId, writtenAt); // in line before the Chat's next turn
    chat.sendText("two");
    await chat.nextTurn();
    await chat.finish();
    const { output } = await queued;
    const { snapshot } = await client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
    expect(snapshotTexts(snapshot)).toEqual(["one", "echo: one", "two", "echo: two", "after", "echo: after"]);
  });

  it("ENQUEUE serves waiting calls first come, first served", async () => {
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("holder") });
    const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
    const queued: Promise<unknown>[] = [];
    for (const text of ["first", "second", "third", "fourth"]) {
      const writtenAt = await sessionWrittenAt(client, sessionId);
      queued.push(
        client.run({ init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.ENQUEUE }, input: textInput(text) }),
      );
      await untilQueued(client, sessionId, writtenAt); // each is in line before the next arrives
    }
    await chat.finish();
    await Promise.all(queued);
    expect(await committedTurns(sessionId)).toEqual(["holder", "first", "second", "third", "fourth"]);
  });

  it("ENQUEUE gives up with DEADLINE_EXCEEDED when the call's deadline passes first", async () => {
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("holder") });
    const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
    const err = await client
      .run(
        { init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.ENQUEUE }, input: textInput("late") },
        { timeoutMs: 300 },
      )
      .catch((e) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    await chat.finish();
    const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId });
    expect(snapshotTexts(snapshot)).toEqual(["holder", "echo: holder"]);
  });

  it("INTERRUPT ends the running Chat with ABORTED and runs on its last committed turn", async () => {
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("one") });
    const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
    const { output } = await client.run({
      init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.INTERRUPT },
      input: textInput("took over"),
    });
    const ended = await chat.drain().then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(ended?.code).toBe(Code.Aborted);
    const { snapshot } = await client.getSnapshot({ agent: "assistant", snapshotId: output!.snapshotId });
    expect(snapshotTexts(snapshot)).toEqual(["one", "echo: one", "took over", "echo: took over"]);
  });
});

describe("a session belongs to its agent", () => {
  it("another agent's reads, list, resume, watch and abort of it are NOT_FOUND", async () => {
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("mine") });
    const { sessionId, snapshotId } = output!;
    const codeOf = (p: Promise<unknown>): Promise<Code | "ok"> =>
      p.then(
        () => "ok" as const,
        (e) => ConnectError.from(e).code,
      );
    const other = "tasks";
    expect(await codeOf(client.getSnapshot({ agent: other, snapshotId }))).toBe(Code.NotFound);
    expect(await codeOf(client.getSnapshot({ agent: other, sessionId }))).toBe(Code.NotFound);
    expect(await codeOf(client.listSnapshots({ agent: other, sessionId }))).toBe(Code.NotFound);
    expect(await codeOf(client.run({ init: { agent: other, sessionId }, input: textInput("steal") }))).toBe(
      Code.NotFound,
    );
    expect(await codeOf(client.run({ init: { agent: other, snapshotId }, input: textInput("steal") }))).toBe(
      Code.NotFound,
    );
    const watch = (async () => {
      for await (const _ of client.watchSnapshot({ agent: other, snapshotId })) void _;
    })();
    expect(await codeOf(watch)).toBe(Code.NotFound);

    const bg = await client.run({
      init: { agent: "assistant", sessionId },
      input: { ...textInput("background", { echoDelayMs: 50 }), detach: true },
    });
    expect(await codeOf(client.abort({ agent: other, snapshotId: bg.output!.snapshotId }))).toBe(Code.NotFound);
    for await (const _ of client.watchSnapshot({ agent: "assistant", snapshotId: bg.output!.snapshotId })) void _;
    const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId });
    expect(snapshot?.status).toBe(SnapshotStatus.COMPLETED); // the other agent's Abort did not reach it
    expect(snapshotTexts(snapshot)).toEqual(["mine", "echo: mine", "background", "echo: background"]);
    const unknown = await codeOf(client.getSnapshot({ agent: "assistant", snapshotId: "no-such-snapshot" }));
    expect(unknown).toBe(Code.NotFound);
  });
});
