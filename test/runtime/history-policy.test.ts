import { describe, expect, it } from "vitest";
import { budgetedHistory, estimateTokens, validateHistoryPolicy } from "../../src/runtime/agents/history-policy.js";
import type { Message } from "../../src/types/content.js";

const user = (text: string): Message => ({ role: "user", content: [{ text }] });
const model = (text: string): Message => ({ role: "model", content: [{ text }] });
const request: Message = { role: "model", content: [{ toolRequest: { ref: "1", name: "t", input: {} } }] };
const response: Message = { role: "tool", content: [{ toolResponse: { ref: "1", name: "t", output: 1 } }] };

describe("budgetedHistory", () => {
  it("keeps the newest maxMessages", () => {
    const history = [user("1"), model("1"), user("2"), model("2"), user("3")];
    expect(budgetedHistory(history, { maxMessages: 3 })).toEqual(history.slice(2));
  });

  it("never starts at a tool response whose request was cut off: it drops that pair too", () => {
    const history = [user("1"), request, response, model("done"), user("2")];
    expect(budgetedHistory(history, { maxMessages: 3 })).toEqual([model("done"), user("2")]);
  });

  it("keeps messages within maxTokens, by the chars/4 estimate", () => {
    const history = [user("a".repeat(400)), model("b".repeat(400)), user("c")];
    const kept = budgetedHistory(history, { maxTokens: estimateTokens(history[1]!) + estimateTokens(history[2]!) });
    expect(kept).toEqual(history.slice(1));
  });

  it("keeps the last user message even when it alone is over the budget", () => {
    const history = [user("old"), model("old"), user("x".repeat(1000))];
    expect(budgetedHistory(history, { maxTokens: 1 })).toEqual([history[2]]);
  });

  it("returns the history itself when it fits", () => {
    const history = [user("1"), model("1")];
    expect(budgetedHistory(history, { maxMessages: 10 })).toBe(history);
  });
});

describe("estimateTokens", () => {
  it("is the characters of the message's JSON over 4, rounded up", () => {
    const message = user("hello");
    expect(estimateTokens(message)).toBe(Math.ceil(JSON.stringify(message).length / 4));
  });
});

describe("validateHistoryPolicy", () => {
  it("refuses a limit below 1 with INVALID_ARGUMENT naming the field", () => {
    expect(() => validateHistoryPolicy({ maxMessages: 0 }, "agent x")).toThrow(/history\.maxMessages/);
  });

  it("refuses an unknown mode", () => {
    expect(() => validateHistoryPolicy({ maxMessages: 2, mode: "compress" }, "agent x")).toThrow(/history\.mode/);
  });

  it("refuses a policy without a limit", () => {
    expect(() => validateHistoryPolicy({}, "agent x")).toThrow(/maxMessages or maxTokens/);
  });
});

describe("validateHistoryPolicy, summarize", () => {
  it("refuses mode summarize without a summaryModel", () => {
    expect(() => validateHistoryPolicy({ maxMessages: 2, mode: "summarize" }, "agent x")).toThrow(/summaryModel/);
  });
});
