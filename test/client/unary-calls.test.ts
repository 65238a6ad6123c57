import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createAgentClient, type AgentClientOptions } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

const transports: [string, AgentClientOptions][] = [
  ["grpc", { protocol: "grpc" }],
  ["connect (HTTP/2)", { protocol: "connect" }],
  ["connect (HTTP/1.1, JSON)", { protocol: "connect", httpVersion: "1.1", useBinaryFormat: false }],
  ["grpc-web (HTTP/1.1)", { protocol: "grpc-web" }],
];

describe.each(transports)("unary and server-streaming calls over %s", (_name, options) => {
  const client = () => createAgentClient(server.baseUrl, options);

  it("listAgents describes the served agents with their state management", async () => {
    const agents = await client().listAgents();
    const byName = new Map(agents.map((a) => [a.name, a]));
    expect([...byName.keys()]).toEqual(expect.arrayContaining(["assistant", "tasks", "notes", "flaky"]));
    expect(byName.get("assistant")?.stateManagement).toBe("server");
    expect(byName.get("notes")?.stateManagement).toBe("client");
    expect(byName.get("tasks")?.stateSchema).toMatchObject({ type: "object" });
  });

  it("run answers one turn and getSnapshot reads it back by snapshot and by session", async () => {
    const output = await client().run("assistant", "over one call");
    expect(output).toMatchObject({
      finishReason: "stop",
      message: { role: "model", content: [{ text: "echo: over one call" }] },
    });
    const bySnapshot = await client().getSnapshot("assistant", { snapshotId: output.snapshotId! });
    const bySession = await client().getSnapshot("assistant", { sessionId: output.sessionId });
    expect(bySession).toEqual(bySnapshot);
    expect(bySnapshot).toMatchObject({
      snapshotId: output.snapshotId,
      sessionId: output.sessionId,
      status: "completed",
      turnIndex: 0,
    });
    expect(bySnapshot.createdAt).toBeGreaterThan(0);
  });

  it("run continues a session given its sessionId", async () => {
    const first = await client().run("assistant", "one");
    const second = await client().run("assistant", "two", { sessionId: first.sessionId });
    expect(second.sessionId).toBe(first.sessionId);
    expect((await client().getSnapshot("assistant", { snapshotId: second.snapshotId! })).turnIndex).toBe(1);
  });

  it("listSnapshots pages through a session newest first, with state only on request", async () => {
    const first = await client().run("assistant", "a");
    await client().run("assistant", "b", { sessionId: first.sessionId });
    const third = await client().run("assistant", "c", { sessionId: first.sessionId });
    const page1 = await client().listSnapshots("assistant", first.sessionId, { pageSize: 2 });
    expect(page1.snapshots.map((s) => s.turnIndex)).toEqual([2, 1]);
    expect(page1.snapshots[0]?.snapshotId).toBe(third.snapshotId);
    expect(page1.snapshots[0]?.state).toBeUndefined();
    expect(page1.nextPageToken).toBeTruthy();
    const page2 = await client().listSnapshots("assistant", first.sessionId, {
      pageSize: 2,
      pageToken: page1.nextPageToken!,
      includeState: true,
    });
    expect(page2.snapshots.map((s) => s.turnIndex)).toEqual([0]);
    expect(page2.snapshots[0]?.state?.messages).toHaveLength(2);
    expect(page2.nextPageToken).toBeUndefined();
  });

  it("watchSnapshot of a completed snapshot yields completed and ends", async () => {
    const output = await client().run("assistant", "settled");
    const seen: string[] = [];
    for await (const status of client().watchSnapshot("assistant", output.snapshotId!)) seen.push(status);
    expect(seen).toEqual(["completed"]);
  });

  it("runStream streams a turn's chunks and resolves with the output", async () => {
    const run = client().runStream("assistant", "streamed over one call");
    const chunks = [];
    for await (const chunk of run) chunks.push(chunk);
    expect(chunks.filter((c) => c.modelChunk).length).toBeGreaterThan(1);
    expect(chunks.at(-1)?.turnEnd).toMatchObject({ turnIndex: 0, finishReason: "stop" });
    const output = await run;
    expect(await run.text()).toBe("echo: streamed over one call");
    expect(output.snapshotId).toBe(chunks.at(-1)?.turnEnd?.snapshotId);
  });

  it("runStream keeps live custom state equal to the snapshot's", async () => {
    const run = client().runStream("tasks", "stream a task");
    const output = await run;
    const snapshot = await client().getSnapshot("tasks", { snapshotId: output.snapshotId! });
    expect(run.custom).toEqual(snapshot.state?.custom);
    expect(run.custom).toEqual({ tasks: [{ id: 1, title: "stream a task", done: false }], nextId: 2 });
  });

  it("runStream rejects with NOT_FOUND for an unknown agent", async () => {
    await expect(client().runStream("no-such-agent", "x").output).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("run carries client-managed state both ways", async () => {
    const first = await client().run<{ notes: string[] }>("notes", "x");
    const second = await client().run<{ notes: string[] }>("notes", "y", { state: first.state! });
    expect(second.state?.custom).toEqual({ notes: ["x", "y"] });
  });
});
