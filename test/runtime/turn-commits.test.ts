import { afterEach, describe, expect, it, vi } from "vitest";
import { expectAgentError, harness, recordsOf, register, replyTurn, setLease } from "./runtime-fixtures.js";
import { DEFAULT_CLAIM_SETTINGS, SessionClaim } from "../../src/runtime/sessions/session-claim.js";
import { TurnCommits } from "../../src/runtime/sessions/turn-commits.js";
import { DEFAULT_RECORD_SETTINGS, type RecordSettings } from "../../src/runtime/sessions/turn-record.js";
import { userText, type Message } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import { Session } from "../../src/runtime/sessions/session.js";
import { SessionMark } from "../../src/runtime/sessions/session-mark.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { uuidv7 } from "../../stores/uuid-v7.js";

vi.setConfig({ testTimeout: 5_000 });
afterEach(() => {
  vi.restoreAllMocks();
});

const model = (text: string): Message => ({ role: "model", content: [{ text }] });

/** TurnCommits on a new session of a fresh memory store. */
function fresh(settings: RecordSettings = DEFAULT_RECORD_SETTINGS) {
  const store = new InMemorySessionStore();
  const claim = new SessionClaim({
    store,
    sessionId: "s1",
    agent: "a",
    owner: "",
    invocationId: uuidv7(),
    settings: DEFAULT_CLAIM_SETTINGS,
  });
  claim.startFresh();
  return { store, claim, commits: new TurnCommits(claim, "s1", settings, undefined) };
}

/** Marks of one session's conversation growing by one exchange per turn, as the runtime takes them after each turn. */
function growing(turns: number): SessionMark<{ n: number }>[] {
  const session = new Session<{ n: number }>({ sessionId: "s1", messages: [], artifacts: [] });
  const marks: SessionMark<{ n: number }>[] = [];
  for (let i = 0; i < turns; i++) {
    session.addMessages(userText(`q${i}`), model(`a${i}`));
    session.updateCustom(() => ({ n: i }));
    marks.push(session.mark());
  }
  return marks;
}

/** A mark of `state` on a history array of its own. */
function markOf<S>(state: SessionState<S>): SessionMark<S> {
  return new SessionMark(state.sessionId ?? "", state.messages, state.messages.length, state.custom, state.artifacts);
}

describe("TurnCommits", () => {
  it("commits the first turn as a checkpoint without parent and remembers it as the last point", async () => {
    const { store, claim, commits } = fresh();
    const [state] = growing(1);
    expect(commits.last).toBeUndefined();
    await commits.commit("snap-0", 0, "stop", state!, 0);
    const stored = (await store.getRecord("snap-0"))!;
    expect(stored).toMatchObject({
      sessionId: "s1",
      turnIndex: 0,
      status: "completed",
      finishReason: "stop",
      depth: 0,
      deltaBytes: 0,
      checkpointTurn: 0,
    });
    expect(stored.parentId).toBeUndefined();
    expect(stored.checkpoint).toEqual({
      sessionId: "s1",
      messages: [userText("q0"), model("a0")],
      artifacts: [],
      custom: { n: 0 },
    });
    expect(stored.checkpointBytes).toBe(JSON.stringify(stored.checkpoint).length);
    expect(commits.last).toMatchObject({
      snapshotId: "snap-0",
      createdAt: stored.createdAt,
      position: { depth: 0, deltaBytes: 0, checkpointBytes: stored.checkpointBytes, checkpointTurn: 0 },
    });
    expect(commits.last!.state).toEqual(stored.checkpoint);
    await claim.release();
  });

  it("commits each later turn as the delta from the previous commit, chained to it", async () => {
    const { store, claim, commits } = fresh();
    const [s0, s1] = growing(2);
    await commits.commit("snap-0", 0, "stop", s0!, 0);
    await commits.commit("snap-1", 1, "length", s1!, 2);
    const stored = (await store.getRecord("snap-1"))!;
    expect(stored).toMatchObject({
      parentId: "snap-0",
      turnIndex: 1,
      finishReason: "length",
      depth: 1,
      checkpointTurn: 0,
    });
    expect(stored.checkpoint).toBeUndefined();
    expect(stored.delta).toEqual({
      keepMessages: 2,
      appendMessages: [userText("q1"), model("a1")],
      customPatch: [{ op: "replace", path: "/n", value: 1 }],
    });
    expect(stored.deltaBytes).toBe(JSON.stringify(stored.delta).length);
    expect(commits.last!.position.depth).toBe(1);
    expect((await store.getHead("s1"))!).toMatchObject({ headSnapshotId: "snap-1", turnCount: 2 });
    await claim.release();
  });

  it("takes a later turn's delta from the history it shares with the last commit, without reading the earlier messages", async () => {
    const { store, claim, commits } = fresh();
    const [s0, s1] = growing(3); // the history holds a third exchange after s1's mark
    await commits.commit("snap-0", 0, "stop", s0!, 0);
    // The hint is ignored on this path: the shared history says what the turn appended.
    await commits.commit("snap-1", 1, "stop", s1!, 0);
    expect((await store.getRecord("snap-1"))!.delta).toMatchObject({
      keepMessages: 2,
      appendMessages: [userText("q1"), model("a1")],
    });
    expect(commits.last!.state.messages).toEqual([userText("q0"), model("a0"), userText("q1"), model("a1")]);
    await claim.release();
  });

  it("compares messages when the history was replaced since the last commit (a rewritten message is not kept)", async () => {
    const { store, claim, commits } = fresh();
    const session = new Session<{ n: number }>({ sessionId: "s1", messages: [], artifacts: [] });
    session.addMessages(userText("q0"), model("a0"));
    await commits.commit("snap-0", 0, "stop", session.mark(), 0);
    const [q0] = session.messages();
    session.setMessages([q0!, model("a0, edited"), userText("q1")]);
    await commits.commit("snap-1", 1, "stop", session.mark(), session.unchangedMessages());
    expect((await store.getRecord("snap-1"))!.delta).toMatchObject({
      keepMessages: 1,
      appendMessages: [model("a0, edited"), userText("q1")],
    });
    await claim.release();
  });

  it("continues from a loaded point (a resume): the delta keeps the messages the hint names", async () => {
    const { store, claim, commits: first } = fresh();
    const [s0] = growing(1);
    await first.commit("snap-0", 0, "stop", s0!, 0);
    const loaded = { ...first.last!, state: structuredClone(first.last!.state) };
    const resumed = new TurnCommits(claim, "s1", DEFAULT_RECORD_SETTINGS, loaded);
    const session = new Session(loaded.state);
    session.addMessages(userText("q1"));
    await resumed.commit("snap-1", 1, "stop", session.mark(), session.unchangedMessages());
    expect((await store.getRecord("snap-1"))!.delta).toEqual({ keepMessages: 2, appendMessages: [userText("q1")] });
    await claim.release();
  });

  it("writes a checkpoint again when the policy says so (here after two deltas)", async () => {
    const { store, claim, commits } = fresh({
      ...DEFAULT_RECORD_SETTINGS,
      checkpoints: { ...DEFAULT_RECORD_SETTINGS.checkpoints, maxDepth: 2 },
    });
    const states = growing(3);
    for (const [i, state] of states.entries()) await commits.commit(`snap-${i}`, i, "stop", state, i * 2);
    const records = await recordsOf(store, "s1");
    expect(records.map((r) => [r.depth, r.checkpoint ? "checkpoint" : "delta", r.checkpointTurn])).toEqual([
      [0, "checkpoint", 0],
      [1, "delta", 0],
      [0, "checkpoint", 2],
    ]);
    await claim.release();
  });

  it("gives each snapshot a creation time after its parent's, even when the clock has not moved", async () => {
    const { store, claim, commits } = fresh();
    vi.spyOn(Date, "now").mockReturnValue(1_000_000);
    const [s0, s1] = growing(2);
    await commits.commit("snap-0", 0, "stop", s0!, 0);
    await commits.commit("snap-1", 1, "stop", s1!, 2);
    expect((await store.getRecord("snap-0"))!.createdAt).toBe(1_000_000);
    expect((await store.getRecord("snap-1"))!.createdAt).toBe(1_000_001);
    vi.restoreAllMocks();
    await claim.release();
  });

  it("continues from a resumed snapshot: the first commit's parent is the resume point", async () => {
    const { store, claim, commits: first } = fresh();
    const [s0, s1] = growing(2);
    await first.commit("snap-0", 0, "stop", s0!, 0);
    const resumed = new TurnCommits(claim, "s1", DEFAULT_RECORD_SETTINGS, first.last);
    expect(resumed.last).toBe(first.last);
    await resumed.commit("snap-1", 1, "stop", s1!, 2);
    expect((await store.getRecord("snap-1"))!.parentId).toBe("snap-0");
    await claim.release();
  });

  it("refuses a turn over the session size cap with RESOURCE_EXHAUSTED before writing anything", async () => {
    const { store, claim, commits } = fresh({ ...DEFAULT_RECORD_SETTINGS, maxSessionBytes: 100 });
    const state: SessionState = { sessionId: "s1", messages: [userText("x".repeat(200))], artifacts: [] };
    const error = await expectAgentError(
      commits.commit("snap-0", 0, "stop", markOf(state), 0),
      "RESOURCE_EXHAUSTED",
      /over the limit of 100 .*nothing was written/,
    );
    expect(error.details).toEqual({ sessionBytes: JSON.stringify(state).length, maxSessionBytes: 100 });
    expect(store.sizes().records).toBe(0);
    expect(commits.last).toBeUndefined();
    await claim.release();
  });

  it("keeps its last point when the claim refuses the commit (ABORTED)", async () => {
    const { store, commits } = fresh();
    const [s0, s1] = growing(2);
    await commits.commit("snap-0", 0, "stop", s0!, 0);
    const last = commits.last;
    await setLease(store, "s1", { invocationId: "thief", expiresAt: Date.now() + 60_000 });
    await expectAgentError(commits.commit("snap-1", 1, "stop", s1!, 2), "ABORTED");
    expect(commits.last).toBe(last);
    expect(await store.getRecord("snap-1")).toBeUndefined();
  });

  it("fails an attached turn over the cap in-band (RESOURCE_EXHAUSTED); the last good snapshot stays", async () => {
    const { store, registry } = harness({ sessions: { maxSessionBytes: 1_000 } });
    const agent = register(registry, { name: "a", store: "default", turn: replyTurn });
    const first = await agent.runText("small");
    const output = await agent.runText("y".repeat(1_000), { sessionId: first.sessionId });
    expect(output).toMatchObject({
      finishReason: "failed",
      snapshotId: first.snapshotId,
      error: { status: "RESOURCE_EXHAUSTED" },
    });
    expect((await store.getHead(first.sessionId))!.headSnapshotId).toBe(first.snapshotId);
    expect(store.sizes().records).toBe(1);
  });
});
