import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { mongoForTests } from "../harness/mongo-java-server.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

interface SharedStore {
  uri: string;
  stop(): Promise<void>;
}

const stores: Record<string, () => Promise<SharedStore>> = {
  file: async () => ({ uri: `file:${await mkdtemp(join(tmpdir(), "agentd-shared-"))}`, stop: async () => {} }),
  mongodb: async () => {
    const mongo = await mongoForTests();
    return { uri: mongo.uri, stop: () => mongo.stop() };
  },
};

describe.each(Object.keys(stores))("two processes sharing a %s store", (kind) => {
  let shared: SharedStore;
  let a: AgentdProcess;
  let b: AgentdProcess;
  beforeAll(async () => {
    shared = await stores[kind]!();
    [a, b] = await Promise.all([startAgentd({ args: ["--store", shared.uri] }), startAgentd({ args: ["--store", shared.uri] })]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await shared?.stop();
  });

  async function watch(server: AgentdProcess, snapshotId: string): Promise<SnapshotStatus[]> {
    const statuses: SnapshotStatus[] = [];
    for await (const res of agentServiceClient(server.baseUrl, "grpc").watchSnapshot({ agent: "assistant", snapshotId })) statuses.push(res.status);
    return statuses;
  }

  it("an Abort on B stops work detached on A", async () => {
    const chat = new WireChat(agentServiceClient(a.baseUrl, "grpc"), {
      init: { agent: "assistant" },
      input: textInput("a long reply that takes a while to stream", { echoDelayMs: 150 }),
    });
    chat.send({ input: { ...textInput("queued behind it", { echoDelayMs: 150 }), detach: true } });
    const { output } = await chat.drain();
    const watching = watch(b, output.snapshotId);
    const res = await agentServiceClient(b.baseUrl, "grpc").abort({ agent: "assistant", snapshotId: output.snapshotId });
    expect(res.status).toBe(SnapshotStatus.ABORTED);
    expect(await watching).toEqual([SnapshotStatus.PENDING, SnapshotStatus.ABORTED]);
    // A observed the abort and stopped: its finalizer recorded the state it had, without the queued turn.
    await new Promise((r) => setTimeout(r, 2500));
    const row = (await agentServiceClient(b.baseUrl, "grpc").getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })).snapshot!;
    expect(row.status).toBe(SnapshotStatus.ABORTED);
    const texts = (row.state?.messages ?? []).map((m) => (m.content[0]?.kind.case === "text" ? m.content[0].kind.value : ""));
    expect(texts).not.toContain("echo: queued behind it");
  });

  it("WatchSnapshot on B sees A's background work complete", async () => {
    const { output } = await agentServiceClient(a.baseUrl, "grpc").run({
      init: { agent: "assistant" },
      input: { ...textInput("finish me", { echoDelayMs: 200 }), detach: true },
    });
    expect(await watch(b, output!.snapshotId)).toEqual([SnapshotStatus.PENDING, SnapshotStatus.COMPLETED]);
    const latest = await agentServiceClient(b.baseUrl, "grpc").getSnapshot({ agent: "assistant", sessionId: output!.sessionId });
    expect(latest.snapshot?.snapshotId).toBe(output!.snapshotId);
  });

  it("B resumes a session A started", async () => {
    const first = await agentServiceClient(a.baseUrl, "grpc").run({ init: { agent: "assistant" }, input: textInput("on A") });
    const second = await agentServiceClient(b.baseUrl, "grpc").run({ init: { agent: "assistant", sessionId: first.output!.sessionId }, input: textInput("on B") });
    const snap = await agentServiceClient(a.baseUrl, "grpc").getSnapshot({ agent: "assistant", sessionId: first.output!.sessionId });
    expect(snap.snapshot?.snapshotId).toBe(second.output!.snapshotId);
    expect(snap.snapshot?.state?.messages).toHaveLength(4);
  });
});
