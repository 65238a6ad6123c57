import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError } from "@connectrpc/connect";
import { createAgentClient } from "../../src/client/index.js";
import type { RetryEvent } from "../../src/client/retry-policy.js";
import { userText } from "../../src/types/content.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { TcpBalancer } from "../harness/tcp-balancer.js";

const CONVERSATIONS = 8;

/** What one conversation did through the rolling restart. */
interface ConversationLog {
  sessionId: string | undefined;
  turns: number;
  failures: string[];
}

/**
 * Issue 47, item 4: a rolling restart (SIGTERM one instance, start its
 * replacement, then the other) of two agentd instances on one store, behind
 * one address, under 8 open conversations: on SIGTERM an instance stops
 * accepting (its port closes, GOAWAY), each open Chat ends with UNAVAILABLE
 * after its running turn, and the client's reconnect continues it on the
 * other instance. No call fails; no turn is lost or run twice.
 */
describe("rolling restart of two instances on one SQLite store", () => {
  let dir: string;
  const running = new Set<AgentdProcess>();
  let balancer: TcpBalancer;
  let baseUrl: string;
  const start = async (): Promise<AgentdProcess> => {
    const server = await startAgentd({ args: ["--store", `sqlite:${dir}/agentd.db`, "--drain-ms", "20000"] });
    running.add(server);
    return server;
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "agentd-rolling-"));
  });
  afterAll(async () => {
    await balancer?.stop();
    for (const server of running) await server.stop("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  });

  it(
    `${CONVERSATIONS} open conversations ride out the restart of both instances: 0 failed calls`,
    { timeout: 180_000 },
    async () => {
      const first = [await start(), await start()];
      balancer = new TcpBalancer(first.map((s) => s.port));
      baseUrl = `http://127.0.0.1:${await balancer.start()}`;
      const retries: RetryEvent[] = [];
      let stopping = false;
      const logs: ConversationLog[] = [];
      const conversations = Array.from({ length: CONVERSATIONS }, async (_, n) => {
        // One client each: its own HTTP/2 connection, spread over the instances by the balancer.
        const client = createAgentClient(baseUrl, { protocol: "grpc", onRetry: (e) => retries.push(e) });
        const log: ConversationLog = { sessionId: undefined, turns: 0, failures: [] };
        logs.push(log);
        const conversation = client.chat("assistant");
        while (!stopping) {
          try {
            const end = await conversation.send({
              message: userText(`conversation ${n} turn ${log.turns}`, { echoDelayMs: 100 }),
            });
            if (end.finishReason !== "stop") log.failures.push(`turn ${log.turns}: ${end.finishReason}`);
            log.turns++;
          } catch (err) {
            log.failures.push(`turn ${log.turns}: ${ConnectError.from(err).message}`);
            break;
          }
        }
        try {
          const output = await conversation.output();
          if (output.error) log.failures.push(`output: ${output.error.message}`);
        } catch (err) {
          log.failures.push(`output: ${ConnectError.from(err).message}`);
        }
        log.sessionId = conversation.sessionId;
      });

      const settle = () => new Promise((resolve) => setTimeout(resolve, 1_500));
      await settle();
      // Restart each instance in turn: its replacement joins the balancer, then the next one goes.
      const replacements: AgentdProcess[] = [];
      for (const old of first) {
        const exit = old.stop("SIGTERM");
        const replacement = await start();
        replacements.push(replacement);
        balancer.backends = [...first.filter((s) => s !== old && !replacements.includes(s)), ...replacements].map(
          (s) => s.port,
        );
        expect(await exit).toBe(0);
        // Its Chats handed off after their running turn; none was held until the drain grace ran out and cut.
        expect(old.logs()).not.toMatch(/drain grace expired/);
        running.delete(old);
        await settle();
      }
      stopping = true;
      await Promise.all(conversations);

      expect(logs.flatMap((l) => l.failures)).toEqual([]);
      // The conversations moved: each restart sent its open Chats elsewhere through a reconnect.
      const handOffs = retries.filter((e) => e.procedure === "Chat" && /draining/.test(e.message));
      expect(handOffs.length).toBeGreaterThanOrEqual(CONVERSATIONS);
      // Every acknowledged turn is in its session once: a user message and its echo each.
      const reader = createAgentClient(baseUrl, { protocol: "grpc" });
      for (const log of logs) {
        expect(log.turns).toBeGreaterThan(0);
        const snapshot = await reader.getSnapshot("assistant", { sessionId: log.sessionId! });
        expect(snapshot.state?.messages.length).toBe(2 * log.turns);
      }
    },
  );
  it(
    "a watch and an attach on a draining instance move to the other instance: the work's stream arrives once, complete",
    {
      timeout: 120_000,
    },
    async () => {
      const [draining, other] = [await start(), await start()];
      // The work runs on the instance that stays.
      const onOther = createAgentClient(`http://127.0.0.1:${other.port}`, { protocol: "grpc" });
      const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(" ");
      const detached = await onOther.run("assistant", { message: userText(words, { echoDelayMs: 400 }), detach: true });
      // The follower's connections land on the instance that drains.
      const follower = new TcpBalancer([draining.port]);
      const followerUrl = `http://127.0.0.1:${await follower.start()}`;
      const retries: RetryEvent[] = [];
      const client = createAgentClient(followerUrl, { protocol: "grpc", onRetry: (e) => retries.push(e) });
      const attached = client.attach("assistant", detached.snapshotId!);
      const statuses: string[] = [];
      const watched = (async () => {
        for await (const status of client.watchSnapshot("assistant", detached.snapshotId!)) statuses.push(status);
      })();
      for await (const chunk of attached) if (chunk.modelChunk) break; // following on the draining instance
      follower.backends = [draining.port, other.port];
      expect(await draining.stop("SIGTERM")).toBe(0);
      running.delete(draining);
      // Cut by the drain, not by the end of the grace: both streams were handed off.
      expect(draining.logs()).not.toMatch(/drain grace expired/);
      const output = await attached;
      await watched;
      await follower.stop();
      expect(output.finishReason).toBe("stop");
      expect(await attached.text()).toBe(`echo: ${words}`);
      expect(statuses.at(-1)).toBe("completed");
      const handedOff = new Set(retries.filter((e) => /draining/.test(e.message)).map((e) => e.procedure));
      expect(handedOff).toEqual(new Set(["AttachInvocation", "WatchSnapshot"]));
    },
  );
});
