import { describe, expect, it } from "vitest";
import { Session } from "../../src/runtime/session.js";
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

  it("replaces a same-named artifact and appends unnamed ones", () => {
    const session = new Session({ messages: [], artifacts: [] });
    session.addArtifacts({ name: "a", parts: [{ text: "1" }] }, { parts: [{ text: "x" }] });
    session.addArtifacts({ name: "a", parts: [{ text: "2" }] }, { parts: [{ text: "y" }] });
    expect(session.artifacts().map((a) => a.parts[0]!.text)).toEqual(["2", "x", "y"]);
  });
});
