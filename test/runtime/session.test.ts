import { describe, expect, it } from "vitest";
import { expectThrowsAgentError } from "./runtime-fixtures.js";
import { z } from "zod";
import { Session } from "../../src/runtime/sessions/session.js";
import { userText, type Message } from "../../src/types/content.js";

const history = (n: number): Message[] => Array.from({ length: n }, (_, i) => userText(`m${i}`));

describe("Session: isolation by immutability", () => {
  it("copies and freezes a message once when it enters, so the caller's object stays its own", () => {
    const session = new Session({ messages: [], artifacts: [] });
    const mine = userText("hello");
    session.addMessages(mine);
    mine.content[0]!.text = "changed by the caller";
    expect(session.messages()[0]!.content[0]!.text).toBe("hello");
    expect(Object.isFrozen(session.messages()[0]!.content[0])).toBe(true);
    expect(Object.isFrozen(mine)).toBe(false);
  });

  it("hands out the history as a frozen array sharing the stored messages (no copies)", () => {
    const session = new Session({ messages: history(3), artifacts: [] });
    const a = session.messages();
    expect(Object.isFrozen(a)).toBe(true);
    expect(() => (a as Message[]).push(userText("x"))).toThrow(TypeError);
    expect(session.snapshotState().messages[1]).toBe(a[1]);
  });

  it("messagesAfter(prelude) is the prelude then the history, in a new array: changing it leaves the history as it was", () => {
    const session = new Session({ messages: history(2), artifacts: [] });
    const system: Message = { role: "system", content: [{ text: "be brief" }] };
    const sent = session.messagesAfter([system]);
    expect(sent.map((m) => m.content[0]!.text)).toEqual(["be brief", "m0", "m1"]);
    expect(sent[1]).toBe(session.messages()[0]);
    sent.push(userText("added to the request only"));
    session.addMessages(userText("m2"));
    expect(session.messages().map((m) => m.content[0]!.text)).toEqual(["m0", "m1", "m2"]);
    expect(sent).toHaveLength(4);
  });

  it("gives custom state to callers as a private mutable copy", () => {
    const session = new Session<{ n: number }>({ messages: [], artifacts: [], custom: { n: 1 } });
    const copy = session.custom()!;
    copy.n = 99;
    expect(session.custom()).toEqual({ n: 1 });
    session.updateCustom((c) => ({ n: c!.n + 1 }));
    expect(session.snapshotState().custom).toEqual({ n: 2 });
  });

  it("tracks how many leading messages are unchanged since the last commit mark", () => {
    const session = new Session({ messages: history(4), artifacts: [] });
    expect(session.unchangedMessages()).toBe(4);
    session.addMessages(userText("new"));
    expect(session.unchangedMessages()).toBe(4);
    const current = session.messages();
    session.setMessages([current[0]!, userText("edited middle"), current[2]!, current[3]!, current[4]!]);
    expect(session.unchangedMessages()).toBe(1);
    session.markUnchanged();
    expect(session.unchangedMessages()).toBe(5);
    session.restore({ messages: history(2), artifacts: [] });
    expect(session.unchangedMessages()).toBe(2);
  });

  it("counts no message added since the mark as unchanged, even when the history is replaced with itself", () => {
    const session = new Session({ messages: history(2), artifacts: [] });
    session.addMessages(userText("not committed"));
    session.setMessages(session.messages());
    expect(session.unchangedMessages()).toBe(2);
    session.setMessages(session.messages().slice(0, 1));
    expect(session.unchangedMessages()).toBe(1);
  });

  it("replaces a same-named artifact and appends unnamed ones", () => {
    const session = new Session({ messages: [], artifacts: [] });
    session.addArtifacts({ name: "a", parts: [{ text: "1" }] }, { parts: [{ text: "x" }] });
    session.addArtifacts({ name: "a", parts: [{ text: "2" }] }, { parts: [{ text: "y" }] });
    expect(session.artifacts().map((a) => a.parts[0]!.text)).toEqual(["2", "x", "y"]);
  });
});

describe("Session: state", () => {
  it("adopts the constructor's state by freezing it in place (no copy)", () => {
    const message = userText("m");
    const artifact = { name: "a", parts: [{ text: "1" }] };
    const session = new Session({ sessionId: "s1", messages: [message], artifacts: [artifact], custom: { n: 1 } });
    expect(session.messages()[0]).toBe(message);
    expect(session.artifacts()[0]).toBe(artifact);
    expect(Object.isFrozen(message.content[0])).toBe(true);
    expect(Object.isFrozen(artifact.parts)).toBe(true);
    expect(Object.isFrozen(session.frozenCustom())).toBe(true);
    expect(session.sessionId).toBe("s1");
  });

  it("has the empty session ID when its state has none", () => {
    expect(new Session({ messages: [], artifacts: [] }).sessionId).toBe("");
  });

  it("snapshots the whole state as a frozen value, without a custom key when there is no custom state", () => {
    const session = new Session({ sessionId: "s", messages: history(1), artifacts: [] });
    const state = session.snapshotState();
    expect(state).toEqual({ sessionId: "s", messages: [userText("m0")], artifacts: [] });
    expect("custom" in state).toBe(false);
    expect(Object.isFrozen(state)).toBe(true);
    session.updateCustom(() => 3);
    expect(session.snapshotState().custom).toBe(3);
  });

  it("keeps handing out the same history view until the history changes", () => {
    const session = new Session({ messages: history(2), artifacts: [] });
    const view = session.messages();
    expect(session.messages()).toBe(view);
    session.addMessages(userText("x"));
    const next = session.messages();
    expect(next).not.toBe(view);
    expect(view).toHaveLength(2);
    expect(next).toHaveLength(3);
  });

  it("copies and freezes each message added, in order", () => {
    const session = new Session({ messages: [], artifacts: [] });
    const a = userText("a");
    const b = userText("b");
    session.addMessages(a, b);
    expect(session.messages()).toEqual([a, b]);
    expect(session.messages()[0]).not.toBe(a);
    expect(Object.isFrozen(session.messages()[1])).toBe(true);
  });

  it("keeps messages already in the session as they are when the history is replaced, and copies new ones", () => {
    const session = new Session({ messages: history(2), artifacts: [] });
    const [first] = session.messages();
    const fresh = userText("fresh");
    session.setMessages([first!, fresh]);
    expect(session.messages()[0]).toBe(first);
    expect(session.messages()[1]).not.toBe(fresh);
    expect(session.messages()[1]).toEqual(fresh);
    expect(Object.isFrozen(session.messages()[1])).toBe(true);
    expect(session.unchangedMessages()).toBe(1);
  });

  it("restores a whole state: history, custom state and artifacts", () => {
    const session = new Session<{ n: number }>({
      messages: history(3),
      artifacts: [{ parts: [{ text: "x" }] }],
      custom: { n: 1 },
    });
    const before = session.messages();
    session.restore({ messages: history(1), artifacts: [], custom: { n: 0 } });
    expect(session.messages()).toEqual(history(1));
    expect(before).toHaveLength(3);
    expect(session.artifacts()).toEqual([]);
    expect(session.custom()).toEqual({ n: 0 });
    session.restore({ messages: [], artifacts: [{ name: "a.md", parts: [{ text: "kept" }] }] });
    expect(session.custom()).toBeUndefined();
    expect(session.artifacts()).toEqual([{ name: "a.md", parts: [{ text: "kept" }] }]);
  });

  it("hands out artifacts as a frozen array of copies made when they were added", () => {
    const session = new Session({ messages: [], artifacts: [] });
    const artifact = { name: "a", parts: [{ text: "1" }] };
    session.addArtifacts(artifact);
    artifact.parts[0]!.text = "changed";
    const list = session.artifacts();
    expect(list).toEqual([{ name: "a", parts: [{ text: "1" }] }]);
    expect(Object.isFrozen(list)).toBe(true);
    expect(Object.isFrozen(list[0])).toBe(true);
  });
});

describe("Session: marks (the runtime's per-turn states, no copy of the history)", () => {
  it("keeps a mark's state as it was when taken, however the history, custom state and artifacts change after", () => {
    const session = new Session({ sessionId: "s", messages: history(2), artifacts: [], custom: { n: 1 } });
    session.addArtifacts({ name: "a", parts: [{ text: "1" }] });
    const taken = session.mark();
    session.addMessages(userText("later"));
    session.updateCustom(() => ({ n: 2 }));
    session.addArtifacts({ name: "a", parts: [{ text: "2" }] });
    session.setMessages([userText("replaced")]);
    session.addMessages(userText("after"));
    expect(taken.state()).toEqual({
      sessionId: "s",
      messages: history(2),
      artifacts: [{ name: "a", parts: [{ text: "1" }] }],
      custom: { n: 1 },
    });
    expect(Object.isFrozen(taken.state())).toBe(true);
    expect(Object.isFrozen(taken.state().messages)).toBe(true);
    expect(taken.state()).toBe(taken.state());
  });

  it("equals snapshotState's state at the same point, without a custom key when there is none", () => {
    const session = new Session({ sessionId: "s", messages: history(3), artifacts: [] });
    expect(session.mark().state()).toEqual(session.snapshotState());
    expect("custom" in session.mark().state()).toBe(false);
  });

  it("knows a mark of the same history taken at or after it from an earlier one or one of a replaced history", () => {
    const session = new Session({ messages: history(1), artifacts: [] });
    const first = session.mark();
    session.addMessages(userText("m1"));
    const second = session.mark();
    expect(first.isPrefixOf(second)).toBe(true);
    expect(first.isPrefixOf(first)).toBe(true);
    expect(second.isPrefixOf(first)).toBe(false);
    session.setMessages(session.messages());
    expect(second.isPrefixOf(session.mark())).toBe(false);
  });
});

describe("Session: custom state", () => {
  const schema = z.object({ n: z.number(), label: z.string().default("none") });

  it("has no custom state until one is set", () => {
    const session = new Session({ messages: [], artifacts: [] });
    expect(session.custom()).toBeUndefined();
    expect(session.frozenCustom()).toBeUndefined();
  });

  it("passes the updater a private copy of the current value", () => {
    const session = new Session<{ n: number }>({ messages: [], artifacts: [], custom: { n: 1 } });
    let seen: { n: number } | undefined;
    session.updateCustom((current) => {
      seen = current;
      current!.n = 50;
      return { n: 2 };
    });
    expect(seen).toEqual({ n: 50 });
    expect(session.custom()).toEqual({ n: 2 });
  });

  it("stores a copy of the updater's result, so changing that object later changes nothing", () => {
    const session = new Session<{ n: number }>({ messages: [], artifacts: [] });
    const next = { n: 1 };
    session.updateCustom(() => next);
    next.n = 99;
    expect(session.custom()).toEqual({ n: 1 });
    expect(session.frozenCustom()).not.toBe(next);
    expect(Object.isFrozen(session.frozenCustom())).toBe(true);
  });

  it("stores the schema's parsed value (defaults filled in)", () => {
    const session = new Session<z.infer<typeof schema>>({ messages: [], artifacts: [] }, schema);
    session.updateCustom(() => ({ n: 1 }) as z.infer<typeof schema>);
    expect(session.custom()).toEqual({ n: 1, label: "none" });
  });

  it("refuses an update that fails the schema with INVALID_ARGUMENT naming the field, keeping the old value", () => {
    const session = new Session<z.infer<typeof schema>>(
      { messages: [], artifacts: [], custom: { n: 1, label: "x" } },
      schema,
    );
    const notified: number[] = [];
    session.onCustomChange(() => void notified.push(1));
    const error = expectThrowsAgentError(
      () => session.updateCustom(() => ({ n: "two" }) as never),
      "INVALID_ARGUMENT",
      /^custom state: .*n/,
    );
    expect(error.details).toMatchObject({ field: "n" });
    expect(session.custom()).toEqual({ n: 1, label: "x" });
    expect(notified).toEqual([]);
  });

  it("notifies the change listener once per update, in order; flushCustomEvents waits for them all", async () => {
    const session = new Session<number>({ messages: [], artifacts: [] });
    const seen: (number | undefined)[] = [];
    session.onCustomChange(async () => {
      await Promise.resolve();
      seen.push(session.frozenCustom());
    });
    session.updateCustom(() => 1);
    session.updateCustom(() => 2);
    expect(seen).toEqual([]);
    await session.flushCustomEvents();
    expect(seen).toEqual([2, 2]);
  });

  it("stops notifying once the listener is removed", async () => {
    const session = new Session<number>({ messages: [], artifacts: [] });
    let calls = 0;
    session.onCustomChange(() => void calls++);
    session.updateCustom(() => 1);
    await session.flushCustomEvents();
    session.onCustomChange(undefined);
    session.updateCustom(() => 2);
    await session.flushCustomEvents();
    expect(calls).toBe(1);
  });
});
