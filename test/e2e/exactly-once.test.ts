import { describe, expect, inject, it } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAgentd } from "../harness/agentd-process.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { AgentInput, AgentStreamChunk } from "../../gen/ts/agentd/v1/agent_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { snapshotTexts, useAgentd } from "../harness/use-agentd.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";

// Exactly-once turns (issue 35): an input carrying a request ID runs once per
// session; a retry gets the committed turn back without the agent running.
// The `counted` agent replies `call <n>: <text>`, n counting the model calls
// of the server process, so a turn that ran again would show another n.
// Runs on the project's store (memory, or MongoDB in e2e-mongodb) and, in the
// default project, again on a file store.
const AGENT = "counted";
const SQLITE_DIR = mkdtempSync(join(tmpdir(), "agentd-exactly-once-"));
process.on("exit", () => rmSync(SQLITE_DIR, { recursive: true, force: true }));

/** A user text input carrying `requestId`. */
function input(text: string, requestId: string): AgentInput {
  return { ...textInput(text), requestId } as AgentInput;
}

type AgentClient = ReturnType<typeof agentServiceClient>;

/**
 * Runs `request` as a RunStream: `running` resolves at its first chunk (the
 * turn has the session; the fixture's `slow` inputs stream one before they
 * wait) or when the call ended, `output` with its output.
 */
function runningRun(client: AgentClient, request: Parameters<AgentClient["runStream"]>[0]) {
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const output = (async () => {
    try {
      let output;
      for await (const res of client.runStream(request)) {
        if (res.chunk) started();
        if (res.output) output = res.output;
      }
      return output;
    } finally {
      started();
    }
  })();
  return { running, output };
}

/** The code a call fails with (or "ok"). */
async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describeExactlyOnce("the project's store", []);
if (inject("e2eExpectedStore") === "memory")
  describeExactlyOnce("an SQLite store", ["--store", `sqlite:${join(SQLITE_DIR, "agentd.db")}`]);

function describeExactlyOnce(storeName: string, storeArgs: string[]): void {
  const agentd = useAgentd({ args: ["test/fixtures/retry-agents.ts", ...storeArgs] });

  /** The session's committed turn count. */
  async function turnCount(sessionId: string): Promise<number> {
    const { session } = await agentd.client.getSession({ sessionId });
    return session!.turnCount;
  }

  /** The model replies of the session's head state. */
  async function replies(sessionId: string): Promise<string[]> {
    const { snapshot } = await agentd.client.getSnapshot({ agent: AGENT, sessionId });
    return snapshotTexts(snapshot).filter((t) => t.startsWith("call "));
  }

  /** A session with one committed turn (no request ID), its ID. */
  async function newSession(): Promise<string> {
    const { output } = await agentd.client.run({ init: { agent: AGENT }, input: textInput("hello") });
    return output!.sessionId;
  }

  /** Every chunk of a RunStream call, and its output. */
  async function runStream(request: Parameters<typeof agentd.client.runStream>[0]) {
    const chunks: AgentStreamChunk[] = [];
    let output;
    for await (const res of agentd.client.runStream(request)) {
      if (res.chunk) chunks.push(res.chunk);
      if (res.output) output = res.output;
    }
    return { chunks, output: output! };
  }

  describe(`exactly-once turns on ${storeName}: a retried input runs once`, () => {
    it("a Run retried on a new session resolves to the same session and answers the same output", async () => {
      const id = randomUUID();
      const first = await agentd.client.run({ init: { agent: AGENT }, input: input("plan a trip", id) });
      const retry = await agentd.client.run({ init: { agent: AGENT }, input: input("plan a trip", id) });
      expect(retry.output).toEqual(first.output);
      expect(first.output!.sessionId).not.toBe("");
      expect(await turnCount(first.output!.sessionId)).toBe(1);
      expect(await replies(first.output!.sessionId)).toHaveLength(1);
    });

    it("a Run retried on an existing session answers the same output without a model call", async () => {
      const sessionId = await newSession();
      const id = randomUUID();
      const first = await agentd.client.run({ init: { agent: AGENT, sessionId }, input: input("second", id) });
      const retry = await agentd.client.run({ init: { agent: AGENT, sessionId }, input: input("second", id) });
      expect(retry.output).toEqual(first.output);
      expect(first.output!.usage?.totalTokens).toBeGreaterThan(0);
      expect(await turnCount(sessionId)).toBe(2);
      expect(await replies(sessionId)).toHaveLength(2);
    });

    it("a Run retried from an earlier snapshot answers the committed child's snapshot, not the branch point", async () => {
      const sessionId = await newSession();
      const { snapshot } = await agentd.client.getSnapshot({ agent: AGENT, sessionId });
      await agentd.client.run({ init: { agent: AGENT, sessionId }, input: textInput("moves the head on") });
      const id = randomUUID();
      const from = { agent: AGENT, snapshotId: snapshot!.snapshotId };
      const first = await agentd.client.run({ init: from, input: input("a branch", id) });
      const retry = await agentd.client.run({ init: from, input: input("a branch", id) });
      expect(first.output!.snapshotId).not.toBe(snapshot!.snapshotId);
      expect(retry.output).toEqual(first.output);
      expect(await turnCount(sessionId)).toBe(3);
    });

    it("a RunStream retry streams the committed TurnEnd alone (no model chunks) and the same output", async () => {
      const sessionId = await newSession();
      const id = randomUUID();
      const first = await runStream({ init: { agent: AGENT, sessionId }, input: input("stream me", id) });
      const retry = await runStream({ init: { agent: AGENT, sessionId }, input: input("stream me", id) });
      expect(chunksText(first.chunks)).toMatch(/^call \d+: stream me$/);
      const firstEnd = first.chunks.find((c) => c.turnEnd)!.turnEnd;
      expect(retry.chunks.map((c) => c.turnEnd)).toEqual([firstEnd]);
      expect(retry.output).toEqual(first.output);
      expect(await turnCount(sessionId)).toBe(2);
    });

    it("a Chat re-sending inputs answers the committed ones from the ledger and runs only the new one", async () => {
      const sessionId = await newSession();
      const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
      const chat = new WireChat(agentd.client, { init: { agent: AGENT, sessionId }, input: input("one", a) });
      const one = await chat.nextTurn();
      chat.send({ input: input("two", b) });
      const two = await chat.nextTurn();
      await chat.finish();

      const again = new WireChat(agentd.client, { init: { agent: AGENT, sessionId }, input: input("one", a) });
      again.send({ input: input("two", b) });
      again.send({ input: input("three", c) });
      const [oneAgain, twoAgain, three] = [await again.nextTurn(), await again.nextTurn(), await again.nextTurn()];
      await again.finish();
      expect(oneAgain.chunks).toEqual([{ ...oneAgain.chunks[0], turnEnd: one.turnEnd }]);
      expect(twoAgain.turnEnd).toEqual(two.turnEnd);
      expect(twoAgain.chunks).toHaveLength(1);
      expect(three.turnEnd.turnIndex).toBe(3);
      expect(await turnCount(sessionId)).toBe(4);
      expect((await replies(sessionId)).map((r) => r.replace(/^call \d+: /, ""))).toEqual([
        "hello",
        "one",
        "two",
        "three",
      ]);
    });

    it("the same request ID with a different input is INVALID_ARGUMENT naming the conflict", async () => {
      const sessionId = await newSession();
      const id = randomUUID();
      await agentd.client.run({ init: { agent: AGENT, sessionId }, input: input("original", id) });
      const err = await agentd.client
        .run({ init: { agent: AGENT, sessionId }, input: input("something else", id) })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code).toBe(Code.InvalidArgument);
      expect(err?.rawMessage).toContain(`input.request_id "${id}" was already used for a different input`);
      expect(await turnCount(sessionId)).toBe(2);
    });

    it("a malformed request ID is INVALID_ARGUMENT naming input.request_id", async () => {
      const err = await agentd.client.run({ init: { agent: AGENT }, input: input("hi", "not/a valid id") }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.InvalidArgument);
      expect(err?.rawMessage).toContain("input.request_id must be at most 64 characters");
      const long = await codeOf(agentd.client.run({ init: { agent: AGENT }, input: input("hi", "a".repeat(65)) }));
      expect(long).toBe(Code.InvalidArgument);
    });

    it("a retry sent while its original still runs waits for it and answers its output (not ABORTED busy)", async () => {
      const sessionId = await newSession();
      const id = randomUUID();
      const original = runningRun(agentd.client, {
        init: { agent: AGENT, sessionId },
        input: input("slow 800 work", id),
      });
      await original.running;
      const other = await codeOf(
        agentd.client.run({ init: { agent: AGENT, sessionId }, input: input("unrelated", randomUUID()) }),
      );
      const retry = await agentd.client.run({ init: { agent: AGENT, sessionId }, input: input("slow 800 work", id) });
      expect(retry.output).toEqual(await original.output);
      expect(other).toBe(Code.Aborted); // an input that is not a retry is still refused (busy policy REJECT)
      expect(await turnCount(sessionId)).toBe(2);
    });

    it("racing duplicates on an existing session make one turn and both answer it", async () => {
      const sessionId = await newSession();
      const id = randomUUID();
      const send = () => agentd.client.run({ init: { agent: AGENT, sessionId }, input: input("slow 200 race", id) });
      const [a, b] = await Promise.all([send(), send()]);
      expect(b.output).toEqual(a.output);
      expect(await turnCount(sessionId)).toBe(2);
    });

    it("racing duplicates on a new session make one session with one turn", async () => {
      const id = randomUUID();
      const send = () => agentd.client.run({ init: { agent: AGENT }, input: input("slow 200 new race", id) });
      const [a, b] = await Promise.all([send(), send()]);
      expect(b.output).toEqual(a.output);
      expect(await turnCount(a.output!.sessionId)).toBe(1);
    });
  });
}

describe("the request-ID window (--request-ids-kept)", () => {
  it("a retry of an input whose request ID left the window runs again; one still in it is answered", async () => {
    const server = await startAgentd({ args: ["test/fixtures/retry-agents.ts", "--request-ids-kept", "1"] });
    try {
      const client = agentServiceClient(server.baseUrl, "grpc");
      const [a, b] = [randomUUID(), randomUUID()];
      const first = await client.run({ init: { agent: AGENT }, input: input("one", a) });
      const sessionId = first.output!.sessionId;
      const second = await client.run({ init: { agent: AGENT, sessionId }, input: input("two", b) });
      const secondAgain = await client.run({ init: { agent: AGENT, sessionId }, input: input("two", b) });
      const firstAgain = await client.run({ init: { agent: AGENT, sessionId }, input: input("one", a) });
      expect(secondAgain.output).toEqual(second.output);
      expect(firstAgain.output!.snapshotId).not.toBe(first.output!.snapshotId);
      expect((await client.getSession({ sessionId })).session!.turnCount).toBe(3);
    } finally {
      await server.stop();
    }
  });
});

describe("retried session calls", () => {
  const agentd = useAgentd({ args: ["test/fixtures/retry-agents.ts"] });

  async function newSession(): Promise<string> {
    const { output } = await agentd.client.run({ init: { agent: AGENT }, input: textInput("hello") });
    return output!.sessionId;
  }

  async function turnCountOf(sessionId: string): Promise<number> {
    return (await agentd.client.getSession({ sessionId })).session!.turnCount;
  }

  it("a DeleteSession retried with its request ID answers deleted: true again", async () => {
    const sessionId = await newSession();
    const requestId = randomUUID();
    const first = await agentd.client.deleteSession({ sessionId, requestId });
    const retry = await agentd.client.deleteSession({ sessionId, requestId });
    const fresh = await agentd.client.deleteSession({ sessionId, requestId: randomUUID() });
    expect(first.deleted).toBe(true);
    expect(retry.deleted).toBe(true);
    expect(fresh.deleted).toBe(false); // a new call (new request ID) finds nothing to delete
    expect(await codeOf(agentd.client.getSession({ sessionId }))).toBe(Code.NotFound);
  });

  it("a DeleteSession request ID reused for another session is INVALID_ARGUMENT", async () => {
    const [one, two] = [await newSession(), await newSession()];
    const requestId = randomUUID();
    await agentd.client.deleteSession({ sessionId: one, requestId });
    const err = await agentd.client.deleteSession({ sessionId: two, requestId }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toContain("was already used to delete another session");
    expect((await agentd.client.getSession({ sessionId: two })).session?.sessionId).toBe(two);
  });

  it("a malformed DeleteSession request_id is INVALID_ARGUMENT and deletes nothing", async () => {
    const sessionId = await newSession();
    const err = await agentd.client.deleteSession({ sessionId, requestId: "no spaces" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toContain("request_id must be at most 64 characters");
    expect((await agentd.client.getSession({ sessionId })).session?.sessionId).toBe(sessionId);
  });

  it("a retried detach answers the same pending snapshot, while the work runs and after it finished", async () => {
    const sessionId = await newSession();
    const requestId = randomUUID();
    const detach = { ...textInput("slow 1000 background"), detach: true, requestId } as AgentInput;
    const first = await agentd.client.run({ init: { agent: AGENT, sessionId }, input: detach });
    const whileRunning = await agentd.client.run({ init: { agent: AGENT, sessionId }, input: detach });
    expect(first.output?.finishReason).toBe(FinishReason.DETACHED);
    expect(whileRunning.output).toEqual(first.output);
    const statuses: SnapshotStatus[] = [];
    for await (const res of agentd.client.watchSnapshot({ agent: AGENT, snapshotId: first.output!.snapshotId })) {
      statuses.push(res.status);
    }
    expect(statuses.at(-1)).toBe(SnapshotStatus.COMPLETED);
    const afterwards = await agentd.client.run({ init: { agent: AGENT, sessionId }, input: detach });
    expect(afterwards.output).toEqual(first.output);
    expect(await turnCountOf(sessionId)).toBe(2);
    const other = { ...textInput("slow 1000 other"), detach: true, requestId } as AgentInput;
    expect(await codeOf(agentd.client.run({ init: { agent: AGENT, sessionId }, input: other }))).toBe(
      Code.InvalidArgument,
    );
  });

  it("an UpdateSession retried leaves the session as the first call did (labels, ttl, turns)", async () => {
    const sessionId = await newSession();
    const update = { sessionId, setLabels: { team: "a" }, removeLabels: ["none"], ttl: { seconds: 3600n } };
    const first = (await agentd.client.updateSession(update)).session!;
    const retry = (await agentd.client.updateSession(update)).session!;
    const { updatedAt: _a, expiresAt: _b, ...firstRest } = first;
    const { updatedAt: _c, expiresAt: _d, ...retryRest } = retry;
    expect(retryRest).toEqual(firstRest);
    expect(retry.labels).toEqual({ team: "a" });
    expect(retry.turnCount).toBe(1);
  });
});

describe("exactly-once turns across instances (two servers, one SQLite store)", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentd-exactly-once-shared-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const one = useAgentd({ args: ["test/fixtures/retry-agents.ts", "--store", `sqlite:${join(dir, "agentd.db")}`] });
  const two = useAgentd({ args: ["test/fixtures/retry-agents.ts", "--store", `sqlite:${join(dir, "agentd.db")}`] });

  it("a retry on another instance waits for its running original (named by the lease) and answers its output", async () => {
    const { output } = await one.client.run({ init: { agent: AGENT }, input: textInput("hello") });
    const sessionId = output!.sessionId;
    const id = randomUUID();
    const original = runningRun(one.client, {
      init: { agent: AGENT, sessionId },
      input: input("slow 1000 shared", id),
    });
    await original.running;
    const retry = await two.client.run({ init: { agent: AGENT, sessionId }, input: input("slow 1000 shared", id) });
    expect(retry.output).toEqual(await original.output);
    expect((await two.client.getSession({ sessionId })).session!.turnCount).toBe(2);
  });

  it("new-session duplicates racing on two instances make one turn; the loser is UNAVAILABLE and its retry answers it", async () => {
    const id = randomUUID();
    const request = { init: { agent: AGENT }, input: input("slow 300 racing instances", id) };
    const settled = await Promise.allSettled([one.client.run(request), two.client.run(request)]);
    const answers = settled.filter((r) => r.status === "fulfilled").map((r) => r.value.output);
    const failures = settled.filter((r) => r.status === "rejected").map((r) => ConnectError.from(r.reason));
    expect(answers.length).toBeGreaterThanOrEqual(1);
    expect(failures.map((e) => e.code)).toEqual(failures.map(() => Code.Unavailable));
    const retry = await two.client.run(request);
    expect(retry.output).toEqual(answers[0]);
    expect((await one.client.getSession({ sessionId: answers[0]!.sessionId })).session!.turnCount).toBe(1);
  });

  it("a retry on another instance of a committed turn answers it from the ledger", async () => {
    const id = randomUUID();
    const first = await one.client.run({ init: { agent: AGENT }, input: input("across", id) });
    const retry = await two.client.run({ init: { agent: AGENT }, input: input("across", id) });
    expect(retry.output).toEqual(first.output);
    expect((await two.client.getSession({ sessionId: first.output!.sessionId })).session!.turnCount).toBe(1);
  });
});
