import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createAgentClient, userText, type AgentClient, type SnapshotStatus } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

let server: AgentdProcess;
beforeAll(async () => {
  server = await startAgentd({ args: ["test/fixtures/agents.ts"] });
});
afterAll(async () => {
  await server?.stop();
});

const slow = (text: string, echoDelayMs: number) => ({ message: userText(text, { echoDelayMs }) });

async function statuses(client: AgentClient, agent: string, snapshotId: string): Promise<SnapshotStatus[]> {
  return watchFrom(client, agent, snapshotId).all;
}

/** A running watch: `first` resolves with the first status seen (so an abort can be sent after it), `all` with every status. */
function watchFrom(
  client: AgentClient,
  agent: string,
  snapshotId: string,
): { first: Promise<SnapshotStatus>; all: Promise<SnapshotStatus[]> } {
  let sawFirst!: (status: SnapshotStatus) => void;
  const first = new Promise<SnapshotStatus>((resolve) => (sawFirst = resolve));
  const all = (async () => {
    const seen: SnapshotStatus[] = [];
    for await (const status of client.watchSnapshot(agent, snapshotId)) {
      seen.push(status);
      if (seen.length === 1) sawFirst(status);
    }
    return seen;
  })();
  return { first, all };
}

describe.each(["grpc", "connect"] as const)("background work over %s", (protocol) => {
  let client: AgentClient;
  beforeAll(() => {
    client = createAgentClient(server.baseUrl, { protocol });
  });

  it("attach follows detached work's stream; attaching again after lastSequence gets the rest exactly once", async () => {
    const words = "one two three four five six seven eight";
    const output = await client.run("assistant", { ...slow(words, 40), detach: true });
    expect(output.finishReason).toBe("detached");
    const stop = new AbortController();
    const first = client.attach("assistant", output.snapshotId!, { signal: stop.signal });
    const seen: number[] = [];
    let text = "";
    await expect(
      (async () => {
        for await (const chunk of first) {
          seen.push(chunk.sequence!);
          text += chunk.modelChunk?.content[0]?.text ?? "";
          if (seen.length === 3) stop.abort(); // the connection drops
        }
      })(),
    ).rejects.toMatchObject({ code: Code.Canceled });
    expect(first.lastSequence).toBe(3);
    const rest = client.attach("assistant", output.snapshotId!, { afterSequence: first.lastSequence });
    for await (const chunk of rest) {
      seen.push(chunk.sequence!);
      text += chunk.modelChunk?.content[0]?.text ?? "";
    }
    const ended = await rest;
    expect(seen).toEqual(seen.map((_, i) => i + 1));
    expect(text).toBe(`echo: ${words}`);
    expect(ended).toMatchObject({ finishReason: "stop", snapshotId: output.snapshotId });
    expect(rest.lastSequence).toBe(seen.length);
  });

  it("attach to an unknown snapshot rejects with NotFound", async () => {
    const run = client.attach("assistant", "0190bbbb-0000-7000-8000-000000000000");
    await expect(run.output).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("detach resolves with the pending snapshot, which watchSnapshot follows to completed", async () => {
    const conversation = client.chat("assistant");
    const first = await conversation.send("first");
    const queued = conversation.send(slow("in the background", 300)); // still pending when the watch opens, even under load
    const output = await conversation.detach();
    expect(output.finishReason).toBe("detached");
    expect(output.snapshotId).toBeTruthy();
    expect(conversation.snapshotId).toBe(output.snapshotId);
    await expect(queued.end).rejects.toMatchObject({ code: Code.Canceled });

    expect((await client.getSnapshot("assistant", { snapshotId: output.snapshotId! })).status).toBe("pending");
    expect(await statuses(client, "assistant", output.snapshotId!)).toEqual(["pending", "completed"]);
    const done = await client.getSnapshot("assistant", { snapshotId: output.snapshotId! });
    expect(done.parentId).toBe(first.snapshotId);
    expect(done.state?.messages.at(-1)?.content[0]?.text).toBe("echo: in the background");
  });

  it("detach can carry the last input itself", async () => {
    const conversation = client.chat("assistant");
    const output = await conversation.detach(slow("finish this", 300)); // still pending when the watch opens, even under load
    expect(await statuses(client, "assistant", output.snapshotId!)).toEqual(["pending", "completed"]);
    const done = await client.getSnapshot("assistant", { sessionId: output.sessionId });
    expect(done.state?.messages.map((m) => m.content[0]?.text)).toEqual(["finish this", "echo: finish this"]);
  });

  it("abort stops slow detached work and the snapshot ends aborted", async () => {
    const conversation = client.chat("assistant");
    conversation.send(slow("a long running reply with many words", 200));
    const { snapshotId } = await conversation.detach();
    const watching = watchFrom(client, "assistant", snapshotId!);
    expect(await watching.first).toBe("pending"); // the watch is open before the abort is sent
    expect(await client.abort("assistant", snapshotId!)).toBe("aborted");
    expect(await watching.all).toEqual(["pending", "aborted"]);
    expect((await client.getSnapshot("assistant", { snapshotId: snapshotId! })).status).toBe("aborted");
  });

  it("abort of a completed snapshot reports completed and changes nothing", async () => {
    const output = await client.run("assistant", "done already");
    expect(await client.abort("assistant", output.snapshotId!)).toBe("completed");
  });

  it("detach on the client-managed notes agent rejects with FAILED_PRECONDITION", async () => {
    const conversation = client.chat("notes");
    await expect(conversation.detach("x")).rejects.toMatchObject({ code: Code.FailedPrecondition });
  });

  it("watchSnapshot stops with CANCELED when its signal aborts", async () => {
    const conversation = client.chat("assistant");
    conversation.send(slow("take your time here", 200));
    const { snapshotId } = await conversation.detach();
    const controller = new AbortController();
    const seen: SnapshotStatus[] = [];
    const watching = (async () => {
      for await (const status of client.watchSnapshot("assistant", snapshotId!, { signal: controller.signal })) {
        seen.push(status);
        controller.abort();
      }
    })();
    await expect(watching).rejects.toMatchObject({ code: Code.Canceled });
    expect(seen).toEqual(["pending"]);
    await client.abort("assistant", snapshotId!);
  });
});
