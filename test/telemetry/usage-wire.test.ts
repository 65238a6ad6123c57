// Token usage through the protocol codecs: TurnEnd, AgentOutput, Snapshot and Session carry it
// (agentd.v1.Usage, int64 counts) and read back unchanged; absent stays absent.
import { describe, expect, it } from "vitest";
import {
  agentOutputFromWire,
  agentOutputToWire,
  sessionFromWire,
  sessionToWire,
  snapshotFromWire,
  snapshotToWire,
  turnEndFromWire,
  turnEndToWire,
} from "../../src/protocol/index.js";

const USAGE = { inputTokens: 120_000, outputTokens: 3, totalTokens: 120_003 };

describe("usage in the wire codecs", () => {
  it("round-trips on TurnEnd and AgentOutput", () => {
    const turnEnd = { finishReason: "stop" as const, turnIndex: 2, sessionId: "s", snapshotId: "x", usage: USAGE };
    expect(turnEndToWire(turnEnd).usage?.inputTokens).toBe(120_000n);
    expect(turnEndFromWire(turnEndToWire(turnEnd))).toEqual(turnEnd);
    const { usage: _u, ...withoutUsage } = turnEnd;
    expect(turnEndFromWire(turnEndToWire(withoutUsage))).toEqual(withoutUsage);
    const output = { sessionId: "s", artifacts: [], finishReason: "stop" as const, usage: USAGE };
    expect(agentOutputFromWire(agentOutputToWire(output))).toEqual(output);
  });

  it("round-trips on Snapshot and Session", () => {
    const snapshot = {
      snapshotId: "x",
      sessionId: "s",
      turnIndex: 0,
      createdAt: 1000,
      updatedAt: 1000,
      status: "completed" as const,
      usage: USAGE,
    };
    expect(snapshotFromWire(snapshotToWire(snapshot))).toEqual(snapshot);
    const session = {
      sessionId: "s",
      agent: "assistant",
      labels: {},
      turnCount: 1,
      headSnapshotId: "x",
      headStatus: "completed" as const,
      createdAt: 1000,
      updatedAt: 2000,
      usage: USAGE,
    };
    expect(sessionFromWire(sessionToWire(session))).toEqual(session);
  });
});
