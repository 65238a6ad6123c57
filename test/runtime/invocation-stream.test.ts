import { describe, expect, it, vi } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import type { DetachedRun } from "../../src/runtime/background/detached-run.js";
import { InvocationStream, type InvocationStreamOptions } from "../../src/runtime/invocations/invocation-stream.js";
import type { ChunkTransform } from "../../src/runtime/agents/state-transform.js";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";

/** A model chunk carrying `text`. */
function text(value: string): AgentStreamChunk {
  return { modelChunk: { role: "model", content: [{ text: value }], index: 0 } };
}

/** The texts and sequence numbers of `chunks`. */
function numbered(chunks: AgentStreamChunk[]): [string | undefined, number | undefined][] {
  return chunks.map((c) => [c.modelChunk?.content[0]?.text, c.sequence]);
}

/** An InvocationStream on `options` (no transform, never detached, failures collected). */
function stream(options: Partial<InvocationStreamOptions> = {}): { out: InvocationStream; failures: AgentError[] } {
  const failures: AgentError[] = [];
  const out = new InvocationStream(
    {
      transform: undefined,
      transformContext: () => ({ agent: "test" }),
      detachedRun: () => undefined,
      onFailure: (err) => failures.push(err),
      maxBufferedChunks: 1024,
      ...options,
    },
    undefined,
  );
  return { out, failures };
}

/** Closes `out` and reads every chunk it delivered. */
async function delivered(out: InvocationStream): Promise<AgentStreamChunk[]> {
  out.close();
  const chunks: AgentStreamChunk[] = [];
  for await (const chunk of out.chunks) chunks.push(chunk);
  return chunks;
}

describe("InvocationStream", () => {
  it("numbers the chunks from 1 in the order they were emitted", async () => {
    const { out } = stream();
    void out.emit(text("a"));
    void out.emit(text("b"));
    await out.drained();
    expect(numbered(await delivered(out))).toEqual([
      ["a", 1],
      ["b", 2],
    ]);
    expect(out.sequence).toBe(2);
  });

  it("delivers a chunk before emit returns when there is no transform and nothing queued", () => {
    const { out } = stream();
    void out.emit(text("now"));
    expect(out.sequence).toBe(1);
  });

  it("keeps the order when a chunk follows one an async transform still holds", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transform: ChunkTransform = async (chunk) => {
      if (chunk.modelChunk?.content[0]?.text === "slow") await held;
      return chunk;
    };
    const { out } = stream({ transform });
    void out.emit(text("slow"));
    void out.emit(text("fast"));
    release();
    await out.drained();
    expect(numbered(await delivered(out))).toEqual([
      ["slow", 1],
      ["fast", 2],
    ]);
  });

  it("numbers a chunk emitted with nothing queued after one that went through the queue", async () => {
    const transform = vi.fn<ChunkTransform>((chunk) => chunk);
    const { out } = stream({ transform });
    await out.emit(text("queued"));
    void out.emit(text("next"));
    await out.drained();
    expect(numbered(await delivered(out))).toEqual([
      ["queued", 1],
      ["next", 2],
    ]);
  });

  it("drops chunks emitted after the stream was closed, without numbering them", async () => {
    const { out } = stream();
    out.close();
    await out.emit(text("late"));
    expect(out.sequence).toBe(0);
    expect(await delivered(out)).toEqual([]);
  });

  it("reports a failing transform to onFailure, and the emit still resolves", async () => {
    const { out, failures } = stream({
      transform: () => {
        throw new Error("transform broke");
      },
    });
    await expect(out.emit(text("x"))).resolves.toBeUndefined();
    expect(failures).toHaveLength(1);
    expect(failures[0]!.message).toContain("transform broke");
  });

  it("after detach, records the chunks in the detached run, numbering on from the client's stream", async () => {
    const recorded: AgentStreamChunk[] = [];
    const detach: { run?: DetachedRun<unknown> } = {};
    const { out } = stream({ detachedRun: () => detach.run });
    void out.emit(text("attached"));
    detach.run = {
      recordsChunks: true,
      recordChunk: async (chunk: AgentStreamChunk) => {
        recorded.push(chunk);
      },
    } as unknown as DetachedRun<unknown>;
    await out.emit(text("detached"));
    expect(numbered(recorded)).toEqual([["detached", 2]]);
    expect(numbered(await delivered(out))).toEqual([["attached", 1]]);
  });

  it("emit returns nothing to await while the client's buffer has room (no promise per chunk)", () => {
    const { out } = stream({ maxBufferedChunks: 3 });
    expect(out.emit(text("a"))).toBeUndefined();
    expect(out.emit(text("b"))).toBeUndefined();
  });

  it("once maxBufferedChunks chunks wait for the client, emit does not resolve until the reader takes them", async () => {
    const { out } = stream({ maxBufferedChunks: 2 });
    void out.emit(text("a"));
    const full = out.emit(text("b"));
    expect(full).toBeInstanceOf(Promise);
    let resolved = false;
    void full!.then(() => (resolved = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(resolved).toBe(false);
    const reader = out.chunks[Symbol.asyncIterator]();
    await reader.next();
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolved).toBe(true);
  });

  it("with a chunk transform, a full buffer holds the emit (and the chunks behind it) until the reader takes", async () => {
    const { out } = stream({ maxBufferedChunks: 1, transform: (chunk) => chunk });
    const first = out.emit(text("a"));
    let resolved = false;
    void first!.then(() => (resolved = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(resolved).toBe(false);
    await out.chunks[Symbol.asyncIterator]().next();
    await first;
    expect(resolved).toBe(true);
  });

  it("a waiting emit resolves when the stream fails (a client that went away blocks no agent)", async () => {
    const { out } = stream({ maxBufferedChunks: 1 });
    const full = out.emit(text("a"));
    out.fail(new AgentError("CANCELLED", "the client cancelled the invocation"));
    await expect(full).resolves.toBeUndefined();
  });
});
