import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, userText, type AgentStreamChunk } from "../../src/client/index.js";
import { StreamedRun, type ChunkStreamResponse } from "../../src/client/streamed-run.js";
import { agentOutputToWire, streamChunkToWire } from "../../src/protocol/index.js";
import { openStoreFromUri } from "../../stores/store-from-uri.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

/** Backdates the heartbeat of row `snapshotId` in the store at `uri` halfway into the takeover window, as another process (its worker is dead: nothing writes it after). */
async function presumeDead(uri: string, snapshotId: string): Promise<void> {
  const store = await openStoreFromUri(uri);
  try {
    const written = await store.updateRecord?.(snapshotId, (r) => ({ ...r, heartbeatAt: Date.now() - 1.5 * TTL_MS }));
    expect(written?.status).toBe("pending");
  } finally {
    await store.close?.();
  }
}

/**
 * The instances' heartbeat TTL: B's takeover poller looks every quarter of it (5 s). Long, so that
 * neither a stall of A under load makes B take over early nor a slow poll of B misses the takeover
 * window: A's death is made to look old by backdating its row's heartbeat, not waited for.
 */
const TTL_MS = 20_000;

describe("client.attach after a takeover of detached work", () => {
  const words = "one two three four five six seven eight nine ten eleven twelve";
  let store: string;
  let a: AgentdProcess;
  let b: AgentdProcess;
  beforeAll(async () => {
    store = `sqlite:${join(await mkdtemp(join(tmpdir(), "agentd-client-takeover-")), "agentd.db")}`;
    const liveness = ["--heartbeat-interval-ms", "100", "--heartbeat-ttl-ms", String(TTL_MS)];
    [a, b] = await Promise.all(
      ["A", "B"].map((id) => startAgentd({ args: ["--store", store, ...liveness, "--instance-id", id] })),
    );
  });
  afterAll(async () => {
    await Promise.all([a?.stop("SIGKILL"), b?.stop()]);
  });

  it("text() is the final reply once: the superseded chunks of the cut turn are dropped at the takeover marker", async () => {
    // A never comes back: without retries its attach fails when it dies, instead of retrying for 30 s.
    const onA = createAgentClient(a.baseUrl, { protocol: "grpc", retry: false });
    const output = await onA.run("assistant", { message: userText(words, { echoDelayMs: 150 }), detach: true });
    let modelChunksOnA = 0;
    await expect(
      (async () => {
        for await (const chunk of onA.attach("assistant", output.snapshotId!)) {
          if (chunk.modelChunk && ++modelChunksOnA === 4) void a.stop("SIGKILL");
        }
      })(),
    ).rejects.toBeDefined(); // the connection died with A
    await a.stop("SIGKILL");
    await presumeDead(store, output.snapshotId!);

    const run = createAgentClient(b.baseUrl).attach("assistant", output.snapshotId!);
    const chunks: AgentStreamChunk[] = [];
    for await (const chunk of run) chunks.push(chunk);
    const marker = chunks.findIndex((c) => c.takeover);
    expect(chunks.filter((c) => c.takeover)).toHaveLength(1);
    expect(chunks.slice(0, marker).some((c) => c.modelChunk)).toBe(true); // something really was superseded
    expect(await run.text()).toBe(`echo: ${words}`);
    expect(await run).toMatchObject({ finishReason: "stop", snapshotId: output.snapshotId });
  });
});

describe("StreamedRun reading a takeover marker", () => {
  /** A stream of `chunks` (numbered from 1) then an output, as AttachInvocation sends it. */
  async function* responses(chunks: AgentStreamChunk[]): AsyncGenerator<ChunkStreamResponse> {
    for (const [i, chunk] of chunks.entries()) yield { chunk: streamChunkToWire({ ...chunk, sequence: i + 1 }) };
    yield { output: agentOutputToWire({ sessionId: "s", artifacts: [], finishReason: "stop" }) };
  }
  const text = (value: string): AgentStreamChunk => ({ modelChunk: { role: "model", content: [{ text: value }] } });
  const turnEnd = (turnIndex: number): AgentStreamChunk => ({
    turnEnd: { finishReason: "stop", turnIndex, sessionId: "s" },
  });
  const patch = (n: number): AgentStreamChunk => ({ customPatch: [{ op: "replace", path: "", value: { n } }] });

  it("rolls the custom state back to where the superseded part began, and drops its text", async () => {
    const run = new StreamedRun<{ n: number }>(
      responses([
        patch(1), // 1
        text("kept "), // 2
        turnEnd(0), // 3
        patch(2), // 4: the cut turn
        text("cut "), // 5
        { takeover: { supersededAfter: 3, turnIndex: 1 } }, // 6
      ]),
      undefined,
      "AttachInvocation",
    );
    await run;
    expect(run.custom).toEqual({ n: 1 });
    expect(await run.text()).toBe("kept ");
  });

  it("keeps the effect of every patch before the superseded part when patches build on each other", async () => {
    const add = (key: string, value: number): AgentStreamChunk => ({
      customPatch: [{ op: "add", path: `/${key}`, value }],
    });
    const run = new StreamedRun<Record<string, number>>(
      responses([
        add("a", 1),
        add("b", 2),
        turnEnd(0),
        add("c", 3),
        { takeover: { supersededAfter: 3, turnIndex: 1 } },
      ]),
      { start: 0 },
      "AttachInvocation",
    );
    await run;
    expect(run.custom).toEqual({ start: 0, a: 1, b: 2 });
  });

  it("keeps the initial custom state when every patch was superseded", async () => {
    const run = new StreamedRun<{ n: number }>(
      responses([patch(7), text("cut"), { takeover: { supersededAfter: 0, turnIndex: 0 } }, text("again")]),
      { n: 0 },
      "AttachInvocation",
    );
    await run;
    expect(run.custom).toEqual({ n: 0 });
    expect(await run.text()).toBe("again");
  });
});
