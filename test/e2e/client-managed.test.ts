import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { useAgentd } from "../harness/use-agentd.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { sessionStateFromWire, sessionStateToWire, valueFromWire } from "../../src/protocol/index.js";

const agentd = useAgentd({ args: ["test/fixtures/agents.ts"] });

describe("client-managed state", () => {
  it("round-trips: the state from one output continues the next invocation", async () => {
    const first = await agentd.client.run({ init: { agent: "notes" }, input: textInput("milk") });
    expect(first.output?.snapshotId).toBe("");
    const state = first.output!.state!;
    expect(valueFromWire(state.custom)).toEqual({ notes: ["milk"] });
    const second = await agentd.client.run({ init: { agent: "notes", state }, input: textInput("eggs") });
    const next = sessionStateFromWire(second.output!.state!);
    expect(next.custom).toEqual({ notes: ["milk", "eggs"] });
    expect(next.sessionId).toBe(state.sessionId);
    expect(next.messages.map((m) => m.content[0]?.text)).toEqual(["milk", "noted: milk", "eggs", "noted: eggs"]);
  });

  it("streams custom patches in a multi-turn Chat", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "notes" }, input: textInput("a") });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.snapshotId).toBe("");
    expect(turn.chunks.some((c) => c.customPatch.length > 0)).toBe(true);
    const { output } = await chat.finish();
    expect(valueFromWire(output.state?.custom)).toEqual({ notes: ["a"] });
  });

  it("rejects custom state that fails the schema, naming the field", async () => {
    const bad = sessionStateToWire({ messages: [], artifacts: [], custom: { notes: [1] } });
    const err = await agentd.client
      .run({ init: { agent: "notes", state: bad }, input: textInput("x") })
      .catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
    expect(ConnectError.from(err).rawMessage).toContain("notes.0");
  });
});
