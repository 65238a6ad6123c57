import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  Code,
  createAgentClient,
  messageText,
  type AgentClient,
  type AgentInput,
  type AgentStreamChunk,
  type RetryEvent,
  type Turn,
} from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { FaultProxy } from "../harness/fault-proxy.js";

let server: AgentdProcess;
let proxy: FaultProxy;
let events: RetryEvent[];
let client: AgentClient;
let direct: AgentClient;

beforeAll(async () => {
  server = await startAgentd();
  proxy = new FaultProxy({ target: { host: "127.0.0.1", port: server.port } });
  await proxy.start();
  direct = createAgentClient(server.baseUrl, { protocol: "grpc" });
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});
beforeEach(async () => {
  events = [];
  client = createAgentClient(`http://127.0.0.1:${proxy.port}`, {
    protocol: "grpc",
    retry: { initialBackoffMs: 10 },
    onRetry: (event) => events.push(event),
  });
  await client.listAgents(); // an open connection, so an armed fault hits the call under test
});

/** The user texts of the session's history, in order. */
async function userTexts(sessionId: string): Promise<string[]> {
  const snapshot = await direct.getSnapshot("assistant", { sessionId });
  return (snapshot.state?.messages ?? []).filter((m) => m.role === "user").map(messageText);
}

describe("client retries through a resetting proxy", () => {
  it("retries a Run the reset cut before the server saw it, and tells onRetry", async () => {
    proxy.arm("before-request");
    const output = await client.run("assistant", "cut before");
    expect(messageText(output.message!)).toBe("echo: cut before");
    expect(client.retryCount).toBe(1);
    expect(events).toEqual([
      expect.objectContaining({ procedure: "Run", attempt: 2, code: Code.Aborted, message: "read ECONNRESET" }),
    ]);
    expect(events[0]!.delayMs).toBeLessThan(10);
  });

  it("surfaces the reset at once with retry: false", async () => {
    const noRetry = createAgentClient(`http://127.0.0.1:${proxy.port}`, { protocol: "grpc", retry: false });
    await noRetry.listAgents();
    proxy.arm("before-request");
    const err = await failure(() => noRetry.run("assistant", "no retry"));
    expect(err.code).toBe(Code.Aborted);
    expect(noRetry.retryCount).toBe(0);
  });

  it("does not retry a status the server answered (NOT_FOUND)", async () => {
    const err = await failure(() => client.run("no-such-agent", "hello"));
    expect(err.code).toBe(Code.NotFound);
    expect(client.retryCount).toBe(0);
    expect(events).toEqual([]);
  });

  it("does not retry INVALID_ARGUMENT", async () => {
    const err = await failure(() => client.run("assistant", { message: { role: "user", content: [] } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(client.retryCount).toBe(0);
    expect(events).toEqual([]);
  });

  it("gives every input a UUID v4 request ID unless the caller set one", async () => {
    const conversation = client.chat("assistant");
    const auto = conversation.send("auto id");
    const own = conversation.send({
      message: { role: "user", content: [{ text: "own id" }] },
      requestId: "caller-id-1",
    });
    await Promise.all([auto, own]);
    await conversation.output();
    expect(auto.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(own.requestId).toBe("caller-id-1");
  });

  it("answers a Run whose reply was lost with the committed output: the turn runs once", async () => {
    const { sessionId } = await client.run("assistant", "first");
    proxy.arm("after-response", { holdMs: 400 });
    const output = await client.run("assistant", "lost reply", { sessionId: sessionId! });
    expect(messageText(output.message!)).toBe("echo: lost reply");
    expect(client.retryCount).toBe(1);
    expect(await userTexts(sessionId!)).toEqual(["first", "lost reply"]);
  });

  it("answers a DeleteSession whose reply was lost as the first call did", async () => {
    const { sessionId } = await client.run("assistant", "delete me");
    proxy.arm("after-response", { holdMs: 400 });
    expect(await client.deleteSession(sessionId!)).toBe(true);
    expect(client.retryCount).toBe(1);
  });

  it("sends the caller's request ID: a second run with it answers with the first turn", async () => {
    const { sessionId } = await client.run("assistant", "start");
    const input = { message: { role: "user" as const, content: [{ text: "only once" }] }, requestId: "caller-id-2" };
    const first = await client.run("assistant", input, { sessionId: sessionId! });
    const second = await client.run("assistant", input, { sessionId: sessionId! });
    expect(second.snapshotId).toBe(first.snapshotId);
    expect(await userTexts(sessionId!)).toEqual(["start", "only once"]);
  });

  it("retries a read-only call cut mid-response", async () => {
    const { sessionId } = await client.run("assistant", "read me");
    proxy.arm("mid-response", { bytes: 20 });
    const snapshot = await client.getSnapshot("assistant", { sessionId: sessionId! });
    expect(snapshot.sessionId).toBe(sessionId);
    expect(client.retryCount).toBe(1);
    expect(events[0]?.procedure).toBe("GetSnapshot");
  });

  it("gives up after maxAttempts and rejects with the last error", async () => {
    const few = createAgentClient(`http://127.0.0.1:${proxy.port}`, {
      protocol: "grpc",
      retry: { maxAttempts: 2, initialBackoffMs: 1 },
    });
    await few.listAgents();
    proxy.resetEveryBytes = 1; // every connection dies at its first byte
    try {
      const err = await failure(() => few.listAgents());
      expect([Code.Aborted, Code.Canceled, Code.Unavailable]).toContain(err.code);
      expect(few.retryCount).toBe(1);
    } finally {
      proxy.resetEveryBytes = 0;
    }
  });

  it("does not retry past the caller's deadline", async () => {
    proxy.resetEveryBytes = 1;
    const slow = createAgentClient(`http://127.0.0.1:${proxy.port}`, {
      protocol: "grpc",
      retry: { maxAttempts: 100, initialBackoffMs: 50, maxBackoffMs: 50 },
    });
    try {
      await failure(() => slow.listAgents({ timeoutMs: 300 }));
    } finally {
      proxy.resetEveryBytes = 0;
    }
    // About 300 / 50 retries; past the deadline it would go on to maxAttempts (99 retries).
    expect(slow.retryCount).toBeLessThan(20);
  });
});

/** An input the echo model answers word by word, `delayMs` before each chunk. */
function slowInput(text: string, delayMs = 40): AgentInput {
  return { message: { role: "user", content: [{ text }], metadata: { echoDelayMs: delayMs } } };
}

/** Resets every connection once the first model chunk of `chunks` arrived; resolves with the chunks. */
async function resetAfterFirstChunk(chunks: AsyncIterable<AgentStreamChunk>): Promise<AgentStreamChunk[]> {
  const seen: AgentStreamChunk[] = [];
  for await (const chunk of chunks) {
    if (chunk.modelChunk && !seen.some((c) => c.modelChunk)) proxy.resetAll();
    seen.push(chunk);
  }
  return seen;
}

const modelPieces = (chunks: AgentStreamChunk[]): string[] =>
  chunks.flatMap((c) => (c.modelChunk?.content ?? []).map((p) => p.text ?? ""));

describe("a conversation whose connection resets", () => {
  async function threeTurns(fault: (second: Turn) => Promise<void>): Promise<Turn[]> {
    const conversation = client.chat("assistant");
    const first = conversation.send("turn one");
    await first;
    const second = conversation.send(slowInput("turn two is slow"));
    const faulted = fault(second);
    const third = conversation.send("turn three");
    await faulted;
    const output = await conversation.output();
    expect(await userTexts(output.sessionId!)).toEqual(["turn one", "turn two is slow", "turn three"]);
    return [first, second, third];
  }

  it("before a turn: re-sends the input, the turn runs once", async () => {
    const turns = await threeTurns(async () => proxy.arm("before-request"));
    expect((await Promise.all(turns)).map((end) => end.turnIndex)).toEqual([0, 1, 2]);
    expect(client.retryCount).toBeGreaterThanOrEqual(1);
    expect(events.every((e) => e.procedure === "Chat")).toBe(true);
  });

  it("during a turn: delivers each chunk once and ends the turn once", async () => {
    let chunks: AgentStreamChunk[] = [];
    const turns = await threeTurns(async (second) => {
      chunks = await resetAfterFirstChunk(second);
    });
    expect(modelPieces(chunks).join("")).toBe("echo: turn two is slow");
    expect(chunks.filter((c) => c.turnEnd)).toHaveLength(1);
    expect((await Promise.all(turns)).map((end) => end.turnIndex)).toEqual([0, 1, 2]);
    expect(client.retryCount).toBeGreaterThanOrEqual(1);
  });

  it("after a turn committed but before its TurnEnd arrived: answers with the committed turn", async () => {
    const turns = await threeTurns(async () => proxy.arm("after-response", { holdMs: 600 }));
    const ends = await Promise.all(turns);
    expect(ends.map((end) => end.turnIndex)).toEqual([0, 1, 2]);
    expect(turns[1]!.received.filter((c) => c.turnEnd)).toHaveLength(1);
    // the committed turn's own snapshot: it ran once (its chunks were lost with the connection; the snapshot has them)
    const { snapshots } = await direct.listSnapshots("assistant", ends[1]!.sessionId);
    expect(snapshots.find((s) => s.turnIndex === 1)?.snapshotId).toBe(ends[1]!.snapshotId);
    expect(client.retryCount).toBeGreaterThanOrEqual(1);
  });
});

describe("a conversation dropped between turns while agentd still holds it", () => {
  it("reconnects once the old invocation lets go of the session: the next turn runs once", async () => {
    const late = new FaultProxy({ target: { host: "127.0.0.1", port: server.port }, serverResetDelayMs: 700 });
    await late.start();
    const seen: RetryEvent[] = [];
    const reconnecting = createAgentClient(`http://127.0.0.1:${late.port}`, {
      protocol: "grpc",
      retry: { initialBackoffMs: 100, maxAttempts: 8 },
      onRetry: (event) => seen.push(event),
    });
    try {
      const conversation = reconnecting.chat("assistant");
      await conversation.send("before the drop");
      late.resetAll(); // the server's side stays open for 700 ms: its invocation still holds the session, idle
      const after = conversation.send("after the drop");
      const end = await after;
      expect(end.turnIndex).toBe(1);
      expect(modelPieces(after.received).join("")).toBe("echo: after the drop");
      // at least one reopened Chat met the old invocation (ABORTED busy) and was retried
      expect(seen.some((e) => e.procedure === "Chat" && e.code === Code.Aborted)).toBe(true);
      const output = await conversation.output();
      expect(await userTexts(output.sessionId!)).toEqual(["before the drop", "after the drop"]);
    } finally {
      await late.close();
    }
  });
});

describe("a conversation whose output is lost to a reset", () => {
  it("resumes the session and returns the output of the turns it ran", async () => {
    const conversation = client.chat("assistant");
    await conversation.send("one");
    const last = await conversation.send("two");
    proxy.arm("after-response", { holdMs: 300 });
    const output = await conversation.output();
    expect(output).toMatchObject({ sessionId: last.sessionId, snapshotId: last.snapshotId, finishReason: "stop" });
    expect(messageText(output.message!)).toBe("echo: two");
    expect(client.retryCount).toBe(1);
    expect(await userTexts(last.sessionId)).toEqual(["one", "two"]);
  });
});

describe("a detach whose answer is lost to a reset", () => {
  it("re-sends the detach input: one background job, the input stored once", async () => {
    const job = client.chat("assistant");
    proxy.arm("after-response", { holdMs: 300 });
    const output = await job.detach(slowInput("one background job", 60));
    expect(output.finishReason).toBe("detached");
    expect(client.retryCount).toBe(1);
    const statuses: string[] = [];
    for await (const status of direct.watchSnapshot("assistant", output.snapshotId!)) statuses.push(status);
    expect(statuses.at(-1)).toBe("completed");
    expect(await userTexts(output.sessionId!)).toEqual(["one background job"]);
  });
});

describe("RunStream through a reset mid-stream", () => {
  it("delivers each chunk once and the output", async () => {
    const run = client.runStream("assistant", slowInput("streamed once please"));
    const chunks = await resetAfterFirstChunk(run);
    const output = await run;
    expect(modelPieces(chunks).join("")).toBe("echo: streamed once please");
    expect(client.retryCount).toBe(1);
    expect(await userTexts(output.sessionId!)).toEqual(["streamed once please"]);
  });
});

describe("AttachInvocation through a reset", () => {
  it("re-attaches after the last sequence it delivered: every chunk once, in order", async () => {
    const job = client.chat("assistant");
    const { snapshotId } = await job.detach(slowInput("a detached job of many words", 60));
    const attached = client.attach("assistant", snapshotId!);
    const chunks = await resetAfterFirstChunk(attached);
    const output = await attached;
    expect(output.finishReason).toBe("stop");
    const sequences = chunks.map((c) => c.sequence ?? 0);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(modelPieces(chunks).join("")).toBe("echo: a detached job of many words");
    expect(client.retryCount).toBe(1);
    expect(events[0]?.procedure).toBe("AttachInvocation");
  });
});

describe("WatchSnapshot through a reset", () => {
  it("re-opens and still ends with the terminal status", async () => {
    const job = client.chat("assistant");
    const { snapshotId } = await job.detach(slowInput("watched through a reset", 80));
    const statuses: string[] = [];
    for await (const status of client.watchSnapshot("assistant", snapshotId!)) {
      if (statuses.length === 0) proxy.resetAll();
      statuses.push(status);
    }
    expect(statuses.at(-1)).toBe("completed");
    expect(statuses.filter((s) => s === "pending").length).toBeLessThanOrEqual(1);
    expect(client.retryCount).toBe(1);
  });
});
