import { getEventListeners } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Code,
  ConnectError,
  createAgentClient,
  type AgentClient,
  type AgentStreamChunk,
} from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

function modelText(chunks: AgentStreamChunk[]): string {
  return chunks
    .flatMap((c) => c.modelChunk?.content ?? [])
    .map((p) => p.text ?? "")
    .join("");
}

describe.each(["grpc", "connect"] as const)("Conversation over %s", (protocol) => {
  let client: AgentClient;
  beforeAll(() => {
    client = createAgentClient(server.baseUrl, { protocol });
  });

  it("streams two turns chunk by chunk, each ending with its TurnEnd, then the output", async () => {
    const conversation = client.chat("assistant");
    const chunks: AgentStreamChunk[] = [];
    for await (const chunk of conversation.send("hello world")) chunks.push(chunk);
    expect(chunks.filter((c) => c.modelChunk).length).toBeGreaterThan(1);
    expect(modelText(chunks)).toBe("echo: hello world");
    const firstEnd = chunks.at(-1)?.turnEnd;
    expect(firstEnd).toMatchObject({ turnIndex: 0, finishReason: "stop" });
    expect(firstEnd?.snapshotId).toBeTruthy();

    const second = conversation.send("second");
    const secondEnd = await second;
    expect(await second.text()).toBe("echo: second");
    expect(secondEnd).toMatchObject({ turnIndex: 1, finishReason: "stop", sessionId: firstEnd?.sessionId });
    expect(secondEnd.snapshotId).not.toBe(firstEnd?.snapshotId);

    const output = await conversation.output();
    expect(output).toMatchObject({
      finishReason: "stop",
      sessionId: firstEnd?.sessionId,
      snapshotId: secondEnd.snapshotId,
    });
    expect(output.message?.content[0]?.text).toBe("echo: second");
  });

  it("buffers queued turns sent before any is read and ends them in order", async () => {
    const conversation = client.chat("assistant");
    const turns = ["one", "two", "three"].map((text) => conversation.send(text));
    const output = await conversation.output();
    expect(await Promise.all(turns.map((t) => t.text()))).toEqual(["echo: one", "echo: two", "echo: three"]);
    expect((await Promise.all(turns)).map((end) => end.turnIndex)).toEqual([0, 1, 2]);
    expect(output.snapshotId).toBe((await turns[2]!).snapshotId);
  });

  it("tracks sessionId and snapshotId from TurnEnds before the output", async () => {
    const conversation = client.chat("assistant");
    expect(conversation.sessionId).toBeUndefined();
    const end = await conversation.send("track me");
    expect(conversation.sessionId).toBe(end.sessionId);
    expect(conversation.snapshotId).toBe(end.snapshotId);
    await conversation.output();
  });

  it("resumes a session in a new conversation", async () => {
    const first = client.chat("assistant");
    await first.send("remember this");
    const { sessionId } = await first.output();

    const resumed = client.chat("assistant", { sessionId });
    const end = await resumed.send("and this");
    expect(end).toMatchObject({ sessionId, turnIndex: 1 });
    await resumed.output();
    const snapshot = await client.getSnapshot("assistant", { sessionId });
    expect(snapshot.state?.messages.map((m) => m.content[0]?.text)).toEqual([
      "remember this",
      "echo: remember this",
      "and this",
      "echo: and this",
    ]);
  });

  it("resumes from a specific snapshot, branching off an earlier turn", async () => {
    const conversation = client.chat("assistant");
    const first = await conversation.send("base");
    await conversation.send("later");
    await conversation.output();

    const branch = client.chat("assistant", { snapshotId: first.snapshotId! });
    const end = await branch.send("branch");
    expect(end.turnIndex).toBe(1);
    const snapshot = await client.getSnapshot("assistant", { snapshotId: end.snapshotId! });
    expect(snapshot.parentId).toBe(first.snapshotId);
    await branch.output();
  });

  it("keeps live custom state equal to GetSnapshot's custom state after each turn", async () => {
    const conversation = client.chat<{ tasks: { id: number; title: string; done: boolean }[]; nextId: number }>(
      "tasks",
    );
    for (const title of ["buy milk", "walk dog", "done 1"]) {
      const end = await conversation.send(title);
      const snapshot = await client.getSnapshot("tasks", { snapshotId: end.snapshotId! });
      expect(conversation.custom).toEqual(snapshot.state?.custom);
    }
    expect(conversation.custom).toEqual({
      tasks: [
        { id: 1, title: "buy milk", done: true },
        { id: 2, title: "walk dog", done: false },
      ],
      nextId: 3,
    });
    await conversation.output();
  });

  it("round-trips client-managed state: the output state continues in a new conversation", async () => {
    const first = client.chat<{ notes: string[] }>("notes");
    expect(await first.send("alpha").text()).toBe("noted: alpha");
    await first.output();
    expect(first.state?.custom).toEqual({ notes: ["alpha"] });
    expect(first.custom).toEqual({ notes: ["alpha"] });

    const second = client.chat("notes", { state: first.state! });
    expect(second.custom).toEqual({ notes: ["alpha"] });
    await second.send("beta");
    expect(second.custom).toEqual({ notes: ["alpha", "beta"] });
    const output = await second.output();
    expect(output.state?.custom).toEqual({ notes: ["alpha", "beta"] });
    expect(output.state?.messages.map((m) => m.content.map((p) => p.text).join(""))).toEqual([
      "alpha",
      "noted: alpha",
      "beta",
      "noted: beta",
    ]);
    expect(output.snapshotId).toBeUndefined();
  });

  it("returns the same output from repeated output() calls", async () => {
    const conversation = client.chat("assistant");
    await conversation.send("once");
    const [a, b] = await Promise.all([conversation.output(), conversation.output()]);
    expect(b).toBe(a);
    expect(await conversation.output()).toBe(a);
  });

  it("refuses send() after output() with FAILED_PRECONDITION", async () => {
    const conversation = client.chat("assistant");
    await conversation.output();
    const err = (() => {
      try {
        conversation.send("too late");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
  });

  it("close() cancels an unfinished turn and the output with CANCELED", async () => {
    const conversation = client.chat("assistant");
    const turn = conversation.send({
      message: { role: "user", content: [{ text: "slow reply here" }], metadata: { echoDelayMs: 200 } },
    });
    conversation.close();
    await expect(turn.end).rejects.toMatchObject({ code: Code.Canceled });
    await expect(conversation.output()).rejects.toMatchObject({ code: Code.Canceled });
  });

  it("releases its listener on the caller's signal once the output arrived", async () => {
    const controller = new AbortController();
    const conversation = client.chat("assistant", {}, { signal: controller.signal });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    conversation.send("hi");
    await conversation.output();
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});
