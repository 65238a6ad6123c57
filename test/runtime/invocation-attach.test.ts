import { describe, expect, it, vi } from "vitest";
import {
  backgroundDone,
  appendRecord,
  chunkLabels,
  drain,
  expectAgentError,
  gatedAgent,
  harness,
  register,
  Rendezvous,
  replyTurn,
} from "./runtime-fixtures.js";
import type { Agent } from "../../src/runtime/agents/agent.js";
import { AgentRegistry } from "../../src/runtime/agents/agent-registry.js";
import type { ChunkLogKey } from "../../stores/chunk-log.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import type { AttachedItem } from "../../src/runtime/invocations/invocation-attach.js";
import { DEFAULT_LIVENESS } from "../../src/runtime/sessions/snapshot-liveness.js";
import type { AgentOutput, AgentStreamChunk } from "../../src/types/agent-io.js";

vi.setConfig({ testTimeout: 5_000 });

/** Everything an attach yields: the chunks, and the output it ended with. */
async function attachAll(
  agent: Agent<unknown>,
  snapshotId: string,
  afterSequence = 0,
  options: Parameters<Agent<unknown>["attach"]>[2] = {},
): Promise<{ chunks: AgentStreamChunk[]; output: AgentOutput | undefined }> {
  const chunks: AgentStreamChunk[] = [];
  let output: AgentOutput | undefined;
  for await (const item of agent.attach({ snapshotId, afterSequence }, new AbortController().signal, options)) {
    if ("chunk" in item) chunks.push(item.chunk);
    else output = item.output;
  }
  return { chunks, output };
}

/** Starts detached work on `agent` running the turns `texts` (each "wait:<p>" blocks at <p>); resolves to its pending ID. */
async function detached(agent: Agent<unknown>, ...texts: string[]): Promise<string> {
  const connection = await agent.connect();
  for (const text of texts) connection.sendText(text);
  connection.detach();
  const output = await connection.output();
  expect(output.finishReason).toBe("detached");
  return output.snapshotId!;
}

/**
 * A gated agent (see `gatedAgent`) on a fresh harness (`options`), and the pending ID of the
 * detached work it started on `texts`.
 */
async function gatedDetachedWork(texts: string[], options: Parameters<typeof harness>[0] = {}) {
  const h = harness(options);
  const gate = new Rendezvous();
  const agent = gatedAgent(h, gate);
  return { h, gate, agent, pendingId: await detached(agent, ...texts) };
}

describe("chunk sequence numbers", () => {
  it("numbers a stream's chunks from 1 with no gaps, across turns", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    const connection = await agent.connect();
    connection.sendText("one");
    connection.sendText("two");
    connection.close();
    const { chunks } = await drain(connection);
    expect(chunkLabels(chunks)).toEqual(["text:reply: one", "turnEnd:0:stop", "text:reply: two", "turnEnd:1:stop"]);
    expect(chunks.map((c) => c.sequence)).toEqual([1, 2, 3, 4]);
  });

  it("numbers only the chunks the chunk transform lets through", async () => {
    const h = harness();
    const agent = register(h.registry, {
      name: "a",
      store: "default",
      turn: replyTurn,
      transforms: { chunk: (chunk) => (chunk.modelChunk ? null : chunk) },
    });
    const connection = await agent.connect();
    connection.sendText("one");
    connection.sendText("two");
    connection.close();
    const { chunks } = await drain(connection);
    expect(chunkLabels(chunks)).toEqual(["turnEnd:0:stop", "turnEnd:1:stop"]);
    expect(chunks.map((c) => c.sequence)).toEqual([1, 2]);
  });
});

describe("attach to detached work", () => {
  it("replays the chunks streamed after detach, then ends with the work's output", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one", "two"]);
    gate.release("one");
    await backgroundDone(h);
    const { chunks, output } = await attachAll(agent, pendingId);
    expect(chunkLabels(chunks)).toEqual([
      "text:reply: wait:one",
      "turnEnd:0:stop",
      "text:reply: two",
      "turnEnd:1:stop",
    ]);
    expect(chunks.map((c) => c.sequence)).toEqual([1, 2, 3, 4]);
    expect(output).toMatchObject({
      snapshotId: pendingId,
      finishReason: "stop",
      message: { role: "model", content: [{ text: "reply: two" }] },
    });
    expect(output!.sessionId).toBe((await h.store.getRecord(pendingId))!.sessionId);
  });

  it("returns only the chunks after the given sequence", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one", "two"]);
    gate.release("one");
    await backgroundDone(h);
    const { chunks } = await attachAll(agent, pendingId, 2);
    expect(chunkLabels(chunks)).toEqual(["text:reply: two", "turnEnd:1:stop"]);
    expect(chunks.map((c) => c.sequence)).toEqual([3, 4]);
  });

  it("follows running work: each chunk arrives as it is recorded, and the output once the work ends", async () => {
    const { gate, agent, pendingId } = await gatedDetachedWork(["wait:one", "wait:two"]);
    const items = agent.attach({ snapshotId: pendingId }, new AbortController().signal);
    const next = async (): Promise<AttachedItem> => (await items.next()).value as AttachedItem;
    const first = next(); // nothing recorded yet: it waits
    gate.release("one");
    expect(await first).toEqual({ chunk: expect.objectContaining({ sequence: 1 }) });
    expect(await next()).toEqual({ chunk: expect.objectContaining({ sequence: 2, turnEnd: expect.anything() }) });
    await gate.reached("two"); // the second turn is blocked: the attach waits for it
    const third = next();
    gate.release("two");
    expect(await third).toEqual({ chunk: expect.objectContaining({ sequence: 3 }) });
    expect(await next()).toEqual({ chunk: expect.objectContaining({ sequence: 4 }) });
    expect(await next()).toEqual({ output: expect.objectContaining({ finishReason: "stop", snapshotId: pendingId }) });
    expect((await items.next()).done).toBe(true);
  });

  it("continues the Chat stream's sequence numbers after detach", async () => {
    const h = harness();
    const gate = new Rendezvous();
    const agent = gatedAgent(h, gate);
    const connection = await agent.connect();
    connection.sendText("one");
    const onChat: AgentStreamChunk[] = [];
    for await (const chunk of connection.stream) {
      onChat.push(chunk);
      if (chunk.turnEnd) break;
    }
    connection.sendText("wait:two");
    await gate.reached("two");
    connection.detach();
    const pendingId = (await connection.output()).snapshotId!;
    gate.release("two");
    await backgroundDone(h);
    const { chunks } = await attachAll(agent, pendingId);
    expect(onChat.map((c) => c.sequence)).toEqual([1, 2]);
    expect(chunks.map((c) => c.sequence)).toEqual([3, 4]);
    expect(chunkLabels(chunks)).toEqual(["text:reply: wait:two", "turnEnd:1:stop"]);
  });

  it("ends with only the output when nothing was streamed after detach", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    const connection = await agent.connect();
    connection.sendText("one");
    for await (const chunk of connection.stream) if (chunk.turnEnd) break;
    connection.detach();
    const pendingId = (await connection.output()).snapshotId!;
    await backgroundDone(h);
    const { chunks, output } = await attachAll(agent, pendingId);
    expect(chunks).toEqual([]);
    expect(output).toMatchObject({ snapshotId: pendingId, finishReason: "stop" });
  });

  it("ends an aborted run with an aborted output", async () => {
    const { gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    const attached = attachAll(agent, pendingId);
    await gate.reached("one");
    expect(await agent.abort(pendingId)).toBe("aborted");
    const { chunks, output } = await attached;
    expect(output).toMatchObject({ snapshotId: pendingId, finishReason: "aborted" });
    expect(chunks.every((c) => !c.modelChunk)).toBe(true);
  });

  it("ends a failed run with its error in the output", async () => {
    const h = harness();
    const agent = gatedAgent(h, new Rendezvous());
    const pendingId = await detached(agent, "fail now");
    await backgroundDone(h);
    const { output } = await attachAll(agent, pendingId);
    expect(output).toMatchObject({
      snapshotId: pendingId,
      finishReason: "failed",
      error: { status: "INTERNAL", message: "failed on fail now" },
    });
  });

  it("refuses another owner's detached work as NOT_FOUND", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    await expectAgentError(attachAll(agent, pendingId, 0, { storeContext: { tenant: "someone-else" } }), "NOT_FOUND");
    gate.release("one");
    await backgroundDone(h);
  });

  it("refuses another agent's detached work as NOT_FOUND", async () => {
    const { h, gate, pendingId } = await gatedDetachedWork(["wait:one"]);
    const other = register(h.registry, { name: "other", store: "default", turn: replyTurn });
    await expectAgentError(attachAll(other, pendingId), "NOT_FOUND", `snapshot "${pendingId}"`);
    gate.release("one");
    await backgroundDone(h);
  });

  it("refuses a snapshot that is not detached work as FAILED_PRECONDITION", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    const done = await agent.runText("one");
    await expectAgentError(attachAll(agent, done.snapshotId!), "FAILED_PRECONDITION", "is not detached work");
  });

  it("ends with UNAVAILABLE when the work stopped sending heartbeats before it ended", async () => {
    const h = harness({ liveness: { heartbeatTtlMs: 1_000 } });
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("one");
    const stale = await appendRecord(h.store, first.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now() - 5_000,
    });
    await expectAgentError(attachAll(agent, stale), "UNAVAILABLE", "stopped sending heartbeats");
  });

  it("refuses chunks past their retention as FAILED_PRECONDITION instead of an output without them", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"], {
      liveness: { ...DEFAULT_LIVENESS, chunkRetentionMs: 1 },
    });
    gate.release("one");
    await backgroundDone(h);
    await new Promise((resolve) => setTimeout(resolve, 5)); // let the 1 ms retention pass
    expect(await h.registry.lifecycle.sweepChunks()).toBe(1);
    await expectAgentError(attachAll(agent, pendingId), "FAILED_PRECONDITION", "no longer kept");
  });

  it("keeps the chunks while the retention lasts: the sweep leaves them", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    gate.release("one");
    await backgroundDone(h);
    expect(await h.registry.lifecycle.sweepChunks()).toBe(0);
    expect((await attachAll(agent, pendingId)).chunks).toHaveLength(2);
  });

  it("ends with DATA_LOSS when the recorded stream skips a sequence", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("one");
    const pendingId = await appendRecord(h.store, first.sessionId, {
      status: "pending",
      turnIndex: 1,
      heartbeatAt: Date.now(),
    });
    const key = { sessionId: first.sessionId, snapshotId: pendingId };
    const text = (t: string) => ({ modelChunk: { role: "model" as const, content: [{ text: t }] } });
    await h.store.appendChunks(key, [{ sequence: 1, chunk: text("a") }], Date.now() + 60_000);
    await h.store.appendChunks(key, [{ sequence: 3, chunk: text("c") }], Date.now() + 60_000); // 2 was lost
    const seen: number[] = [];
    const attached = (async () => {
      for await (const item of agent.attach({ snapshotId: pendingId }, new AbortController().signal)) {
        if ("chunk" in item) seen.push(item.chunk.sequence!);
      }
    })();
    await expectAgentError(attached, "DATA_LOSS", `chunks 2–2 of snapshot "${pendingId}" are missing`);
    expect(seen).toEqual([1]);
  });

  it("refuses bad requests with INVALID_ARGUMENT", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", store: "default", turn: replyTurn });
    await expectAgentError(attachAll(agent, ""), "INVALID_ARGUMENT", "snapshot_id is required");
    await expectAgentError(attachAll(agent, "x", -1), "INVALID_ARGUMENT", "after_sequence");
    await expectAgentError(attachAll(agent, "x", 1.5), "INVALID_ARGUMENT", "after_sequence");
  });

  it("refuses a client-managed agent with FAILED_PRECONDITION", async () => {
    const h = harness();
    const agent = register(h.registry, { name: "a", turn: replyTurn });
    await expectAgentError(attachAll(agent, "x"), "FAILED_PRECONDITION", "client-managed");
  });

  it("ends when the caller cancels, leaving the work running", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    const cancel = new AbortController();
    const items = agent.attach({ snapshotId: pendingId }, cancel.signal);
    const waiting = items.next();
    await gate.reached("one");
    cancel.abort();
    expect((await waiting).done).toBe(true);
    expect((await h.store.getRecord(pendingId))!.status).toBe("pending");
    gate.release("one");
    await backgroundDone(h);
    expect((await h.store.getRecord(pendingId))!.status).toBe("completed");
  });
});

/** A model text chunk. */
const text = (t: string): AgentStreamChunk => ({ modelChunk: { role: "model", content: [{ text: t }] } });

/**
 * A memory store that records `late` in the chunk log of `key` between attach's first read of the
 * log and its read of the row: the work recording its last chunks and ending in that window.
 */
class LateChunksStore extends InMemorySessionStore {
  key: ChunkLogKey | undefined;
  late: number[] = [];
  private reads = 0;

  override async readChunks(...args: Parameters<InMemorySessionStore["readChunks"]>) {
    this.reads++;
    return super.readChunks(...args);
  }

  override async getRecord(...args: Parameters<InMemorySessionStore["getRecord"]>) {
    if (this.key && this.reads > 0 && this.late.length > 0) {
      // One append per chunk: a gap is what a lost append leaves.
      for (const sequence of this.late.splice(0))
        await this.appendChunks(this.key, [{ sequence, chunk: text(`late ${sequence}`) }], Date.now() + 60_000);
    }
    return super.getRecord(...args);
  }
}

describe("attach: the end of the stream", () => {
  /** An agent on a LateChunksStore whose session has an ended detached row with chunks 1–3 recorded. */
  async function endedWork(late: number[]) {
    const store = new LateChunksStore();
    const registry = new AgentRegistry({ defaultStore: store as SessionStore });
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("one");
    const snapshotId = await appendRecord(store, first.sessionId, {
      status: "completed",
      turnIndex: 1,
      heartbeatAt: Date.now(),
    });
    const key = { sessionId: first.sessionId, snapshotId };
    await store.appendChunks(
      key,
      [1, 2, 3].map((sequence) => ({ sequence, chunk: text(`early ${sequence}`) })),
      Date.now() + 60_000,
    );
    store.key = key;
    store.late = late;
    return { agent, snapshotId };
  }

  it("reads every chunk recorded between its last read and the row ending, page by page (here over two pages)", async () => {
    const late = Array.from({ length: 600 }, (_, i) => i + 4);
    const { agent, snapshotId } = await endedWork(late);
    const { chunks, output } = await attachAll(agent, snapshotId);
    expect(chunks.map((c) => c.sequence)).toEqual([1, 2, 3, ...Array.from({ length: 600 }, (_, i) => i + 4)]);
    expect(output).toMatchObject({ snapshotId, finishReason: "unknown" });
  });

  it("ends with DATA_LOSS after the chunks before a gap among those recorded as the row ended", async () => {
    const { agent, snapshotId } = await endedWork([4, 5, 7]);
    const seen: number[] = [];
    const attached = (async () => {
      for await (const item of agent.attach({ snapshotId }, new AbortController().signal)) {
        if ("chunk" in item) seen.push(item.chunk.sequence!);
      }
    })();
    await expectAgentError(attached, "DATA_LOSS", `chunks 6–6 of snapshot "${snapshotId}" are missing`);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });

  it("answers with the output (no state: the session is server-managed) when the retention passed but the chunks are still kept", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"], {
      liveness: { ...DEFAULT_LIVENESS, chunkRetentionMs: 1 },
    });
    gate.release("one");
    await backgroundDone(h);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the 1 ms retention passes; nothing swept it
    const { chunks, output } = await attachAll(agent, pendingId, 2);
    expect(chunks).toEqual([]);
    expect(output).toMatchObject({ snapshotId: pendingId, finishReason: "stop" });
    expect(output!.state).toBeUndefined();
  });

  it("notices, while it follows running work, that the work stopped sending heartbeats (UNAVAILABLE)", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"], {
      liveness: { heartbeatIntervalMs: 60_000, heartbeatTtlMs: 300, chunkRetentionMs: 60_000 },
    });
    await gate.reached("one"); // blocked, and with a 60 s heartbeat interval its row goes stale after 300 ms
    await expectAgentError(attachAll(agent, pendingId), "UNAVAILABLE", "stopped sending heartbeats");
    gate.release("one");
    await backgroundDone(h);
  });

  it("ends with UNAVAILABLE when the store stops delivering changes (it closed) while it follows", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    await gate.reached("one");
    const attached = attachAll(agent, pendingId);
    await vi.waitFor(() => expect(h.store.chunkWatcherCount).toBe(1));
    await h.store.close();
    await expectAgentError(attached, "UNAVAILABLE", "the store stopped delivering changes");
    gate.release("one");
    await h.registry.background.drain(4_000);
  });

  it("leaves no chunk watcher or status subscription open once it ended with the output", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    const attached = attachAll(agent, pendingId);
    await vi.waitFor(() => expect(h.store.chunkWatcherCount).toBe(1));
    gate.release("one");
    expect((await attached).output).toMatchObject({ finishReason: "stop" });
    await backgroundDone(h);
    expect({ watchers: h.store.chunkWatcherCount, subscribers: h.store.subscriberCount }).toEqual({
      watchers: 0,
      subscribers: 0,
    });
  });

  it("leaves no chunk watcher or status subscription open once the caller cancelled", async () => {
    const { h, gate, agent, pendingId } = await gatedDetachedWork(["wait:one"]);
    await gate.reached("one");
    const cancel = new AbortController();
    const items = agent.attach({ snapshotId: pendingId }, cancel.signal);
    const waiting = items.next();
    await vi.waitFor(() => expect(h.store.chunkWatcherCount).toBe(1));
    cancel.abort();
    expect((await waiting).done).toBe(true);
    expect(h.store.chunkWatcherCount).toBe(0);
    gate.release("one");
    await backgroundDone(h);
    expect(h.store.subscriberCount).toBe(0);
  });
});
