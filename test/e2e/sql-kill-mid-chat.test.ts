import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusyPolicy } from "../../gen/ts/agentd/v1/agent_pb.js";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

// Two agentd processes on one SQL store (an sqlite: file, a PostgreSQL database): A is SIGKILLed
// while a turn of a live Chat streams; every turn A acknowledged (its TurnEnd reached the client)
// is readable on B, in order, and B continues the session from the last of them.
describe.each(["sqlite", "postgres"])("SIGKILL of an instance mid-chat on a shared %s store", (kind) => {
  let shared: SharedStore;
  const started: AgentdProcess[] = [];
  beforeAll(async () => {
    shared = await sharedStores[kind]!();
  }, 120_000);
  afterAll(async () => {
    for (const p of started) await p.stop("SIGKILL").catch(() => undefined);
    await shared?.stop();
  });

  const serve = async (): Promise<AgentdProcess> => {
    const p = await startAgentd({ args: ["--store", shared.uri] });
    started.push(p);
    return p;
  };

  it("loses no acknowledged turn: B reads every one and continues after the last", { timeout: 90_000 }, async () => {
    const a = await serve();
    const b = await serve();
    const onA = agentServiceClient(a.baseUrl, "grpc");
    const chat = new WireChat(onA, { init: { agent: "assistant" }, input: textInput("turn 0") });
    const acked = [(await chat.nextTurn()).turnEnd.snapshotId];
    for (let i = 1; i < 5; i++) {
      chat.sendText(`turn ${i}`);
      acked.push((await chat.nextTurn()).turnEnd.snapshotId);
    }
    chat.send({ input: textInput("the turn the kill cuts", { echoDelayMs: 2_000 }) as never });
    await chat.nextChunk(); // it streams: the kill lands mid-turn
    await a.stop("SIGKILL");

    const onB = agentServiceClient(b.baseUrl, "grpc");
    const sessionId = (await onB.getSnapshot({ agent: "assistant", snapshotId: acked[0]! })).snapshot!.sessionId;
    for (const [i, snapshotId] of acked.entries()) {
      const { snapshot } = await onB.getSnapshot({ agent: "assistant", snapshotId });
      expect(snapshot?.status, `turn ${i}`).toBe(SnapshotStatus.COMPLETED);
      expect(snapshot?.parentId ?? "").toBe(i === 0 ? "" : acked[i - 1]);
    }
    // The dead Chat still holds the session's lease (until it lapses): INTERRUPT takes it over.
    const { output: next } = await onB.run({
      init: { agent: "assistant", sessionId, busyPolicy: BusyPolicy.INTERRUPT },
      input: textInput("on B"),
    });
    const { snapshot } = await onB.getSnapshot({ agent: "assistant", snapshotId: next!.snapshotId });
    expect(snapshot?.parentId).toBe(acked[4]);
    expect(snapshotTexts(snapshot)).toEqual([
      ...[0, 1, 2, 3, 4].flatMap((i) => [`turn ${i}`, `echo: turn ${i}`]),
      "on B",
      "echo: on B",
    ]);
  });
});
