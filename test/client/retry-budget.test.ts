/**
 * Issue 47, item 3: the default retry budget is bounded by time, so a call
 * made while agentd is down rides out its restart (here ~3 s, twice what the
 * old 5-attempt budget waited at most), and the backoff reaches its cap.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentClient, messageText, type RetryEvent } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";

const DOWN_MS = 3000;

let dir: string;
let server: AgentdProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "agentd-retry-budget-"));
  server = await startAgentd({ args: ["--store", `sqlite:${dir}/agentd.db`] });
});
afterAll(async () => {
  await server?.stop("SIGKILL");
  await rm(dir, { recursive: true, force: true });
});

describe("the default retry budget", () => {
  it("rides out a crash and restart: a Run and a conversation's turn made while agentd is down succeed", async () => {
    const events: RetryEvent[] = [];
    const client = createAgentClient(server.baseUrl, { protocol: "grpc", onRetry: (e) => events.push(e) });
    const conversation = client.chat("assistant");
    await conversation.send("before the crash");
    const port = server.port;

    await server.stop("SIGKILL");
    const run = client.run("assistant", "while down");
    const turn = conversation.send("also while down");
    await new Promise((resolve) => setTimeout(resolve, DOWN_MS)); // the outage, longer than the old budget
    server = await startAgentd({ args: ["--store", `sqlite:${dir}/agentd.db`, "--port", String(port)] });

    const out = await run;
    expect(messageText(out.message)).toBe("echo: while down");
    const end = await turn;
    expect(end.finishReason).toBe("stop");
    await conversation.output();
    const snapshot = await client.getSnapshot("assistant", { sessionId: conversation.sessionId! });
    expect((snapshot.state?.messages ?? []).filter((m) => m.role === "user").map(messageText)).toEqual([
      "before the crash",
      "also while down",
    ]);
    const runRetries = events.filter((e) => e.procedure === "Run");
    // more attempts than the old default of 5, each within the 30 s window
    expect(runRetries.length).toBeGreaterThan(4);
    expect(runRetries.every((e) => e.elapsedMs <= 30_000)).toBe(true);
    expect(runRetries.map((e) => e.attempt)).toEqual(runRetries.map((_, i) => i + 2));
  }, 120_000);

  it("gives up once maxElapsedMs has passed since the first failure, with the last error", async () => {
    const events: RetryEvent[] = [];
    // nothing listens on port 1: every attempt is refused
    const client = createAgentClient("http://127.0.0.1:1", {
      protocol: "grpc",
      retry: { maxElapsedMs: 1000, initialBackoffMs: 10, maxBackoffMs: 50 },
      onRetry: (e) => events.push(e),
    });
    const err = await client.listAgents().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.Unavailable);
    expect(events.length).toBeGreaterThan(5); // bounded by time, not by 5 attempts
    expect(events.every((e) => e.elapsedMs <= 1000)).toBe(true);
    expect(events.at(-1)!.elapsedMs).toBeGreaterThan(500); // the window was used up
    expect(events.some((e) => e.delayMs > 25)).toBe(true); // the backoff grew toward its 50 ms cap
  }, 60_000);
});
