// Snapshot.pending_inputs over the wire: a pending snapshot of detached work
// carries the inputs it runs (GetSnapshot and ListSnapshots, on every store),
// and a committed or aborted one carries none.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FinishReason, SnapshotStatus, type Snapshot } from "../../gen/ts/agentd/v1/state_pb.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { sharedStores, type SharedStore } from "../harness/shared-stores.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

const stores: Record<string, () => Promise<SharedStore>> = {
  memory: async () => ({ uri: "memory:", stop: async () => {} }),
  ...sharedStores,
};

/** Each pending input's message text (or "resume"), and whether its turn completed. */
function inputsOf(snapshot: Snapshot | undefined): { text: string; completed: boolean }[] {
  return (snapshot?.pendingInputs ?? []).map((input) => ({
    text: input.message
      ? input.message.content.map((p) => (p.kind.case === "text" ? p.kind.value : "")).join("")
      : "resume",
    completed: input.completed,
  }));
}

describe.each(Object.keys(stores))("pending inputs on a %s store", (kind) => {
  let store: SharedStore;
  let server: AgentdProcess;
  beforeAll(async () => {
    store = await stores[kind]!();
    server = await startAgentd({ args: ["--store", store.uri, "--heartbeat-interval-ms", "100"] });
  });
  afterAll(async () => {
    await server?.stop();
    await store?.stop();
  });

  it("a pending snapshot carries the inputs its detached work runs; an aborted one none", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    // The first input's reply waits a minute before its first chunk: the work stays pending until aborted.
    const chat = new WireChat(client, {
      init: { agent: "assistant" },
      input: textInput("one", { echoDelayMs: 60_000 }),
    });
    chat.send({ input: textInput("two") });
    chat.send({ input: { ...textInput("three"), requestId: "req-three", detach: true } });
    const { output } = await chat.drain();
    expect(output.finishReason).toBe(FinishReason.DETACHED);

    const pending = (await client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })).snapshot;
    expect(pending?.status).toBe(SnapshotStatus.PENDING);
    const expected = [
      { text: "one", completed: false },
      { text: "two", completed: false },
      { text: "three", completed: false },
    ];
    expect(inputsOf(pending)).toEqual(expected);
    expect(pending?.pendingInputs[2]?.requestId).toBe("req-three");
    const listed = await client.listSnapshots({ agent: "assistant", sessionId: output.sessionId });
    expect(inputsOf(listed.snapshots.find((s) => s.snapshotId === output.snapshotId))).toEqual(expected);

    await client.abort({ agent: "assistant", snapshotId: output.snapshotId });
    const aborted = (await client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })).snapshot;
    expect(aborted?.status).toBe(SnapshotStatus.ABORTED);
    expect(aborted?.pendingInputs).toEqual([]);
  });

  it("a committed snapshot of detached work carries none", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    const output = (
      await client.run({
        init: { agent: "assistant" },
        input: { ...textInput("quick"), detach: true },
      })
    ).output!;
    for await (const res of client.watchSnapshot({ agent: "assistant", snapshotId: output.snapshotId })) {
      if (res.status !== SnapshotStatus.PENDING) expect(res.status).toBe(SnapshotStatus.COMPLETED);
    }
    const done = (await client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId })).snapshot;
    expect(done?.status).toBe(SnapshotStatus.COMPLETED);
    expect(done?.pendingInputs).toEqual([]);
    const listed = await client.listSnapshots({ agent: "assistant", sessionId: output.sessionId });
    expect(listed.snapshots.map((s) => s.pendingInputs)).toEqual([[]]);
  });
});
