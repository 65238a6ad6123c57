import { describe, expect, it } from "vitest";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import {
  checkSessionQuery,
  compareHeadsNewestFirst,
  decodeHeadPageToken,
  encodeHeadPageToken,
} from "../../stores/session-query.js";

// Session listing queries and their page tokens (stores/session-query.ts).

/** The message of the INVALID_ARGUMENT AgentError `fn` throws (fails the test on anything else). */
const invalidArgument = (fn: () => unknown): string => expectThrowsAgentError(fn, "INVALID_ARGUMENT").message;

describe("compareHeadsNewestFirst", () => {
  it("orders newer updatedAt first", () => {
    expect(compareHeadsNewestFirst({ updatedAt: 2, sessionId: "a" }, { updatedAt: 1, sessionId: "b" })).toBeLessThan(0);
    expect(compareHeadsNewestFirst({ updatedAt: 1, sessionId: "b" }, { updatedAt: 2, sessionId: "a" })).toBeGreaterThan(
      0,
    );
  });

  it("breaks a tie on updatedAt by the greater sessionId first, and calls equal keys equal", () => {
    const keys = ["b", "c", "a"].map((sessionId) => ({ updatedAt: 1, sessionId }));
    expect(keys.sort(compareHeadsNewestFirst).map((k) => k.sessionId)).toEqual(["c", "b", "a"]);
    expect(compareHeadsNewestFirst({ updatedAt: 1, sessionId: "a" }, { updatedAt: 1, sessionId: "b" })).toBe(1);
    expect(compareHeadsNewestFirst({ updatedAt: 1, sessionId: "b" }, { updatedAt: 1, sessionId: "a" })).toBe(-1);
    expect(compareHeadsNewestFirst({ updatedAt: 1, sessionId: "a" }, { updatedAt: 1, sessionId: "a" })).toBe(0);
  });
});

describe("page tokens", () => {
  it("encode a key as h. plus base64url JSON, and decode back to it", () => {
    const token = encodeHeadPageToken({ updatedAt: 7, sessionId: "s" });
    expect(token).toBe(`h.${Buffer.from('[7,"s"]').toString("base64url")}`);
    expect(decodeHeadPageToken(token)).toEqual({ updatedAt: 7, sessionId: "s" });
  });

  it("rejects a token without the h. prefix even when its payload is valid", () => {
    const payload = Buffer.from('[7,"s"]').toString("base64url");
    expect(invalidArgument(() => decodeHeadPageToken(`x.${payload}`))).toBe(
      `invalid session page token "x.${payload}": pass the nextPageToken of a previous page unchanged`,
    );
    expect(invalidArgument(() => decodeHeadPageToken(payload))).toContain("invalid session page token");
  });

  it("rejects a token whose payload is not an [updatedAt, sessionId] pair", () => {
    for (const payload of ['[7,"s",1]', '["7","s"]', "[7,8]", "{}", "not json"]) {
      const token = `h.${Buffer.from(payload).toString("base64url")}`;
      expect(invalidArgument(() => decodeHeadPageToken(token))).toContain("invalid session page token");
    }
  });

  it("shows at most 80 characters of a long bad token in the error", () => {
    const token = `z${"y".repeat(200)}`;
    expect(invalidArgument(() => decodeHeadPageToken(token))).toBe(
      `invalid session page token "${token.slice(0, 80)}…": pass the nextPageToken of a previous page unchanged`,
    );
  });

  it("shows a bad token of exactly 80 characters whole", () => {
    const token = "z".repeat(80);
    expect(invalidArgument(() => decodeHeadPageToken(token))).toContain(`"${token}"`);
  });

  it("rejects a page token that is not a string", () => {
    expect(invalidArgument(() => decodeHeadPageToken(42 as unknown as string))).toContain('"42"');
  });
});

describe("checkSessionQuery", () => {
  it("rejects a missing query or one without an owner string, saying how to ask for the anonymous owner", () => {
    for (const query of [null, undefined, { owner: 5 }]) {
      expect(invalidArgument(() => checkSessionQuery(query as never))).toBe(
        'listing sessions needs an owner ("" for the anonymous owner)',
      );
    }
  });

  it("rejects an agent filter that is not a string", () => {
    expect(invalidArgument(() => checkSessionQuery({ owner: "o", agent: 5 as unknown as string }))).toBe(
      "the agent filter must be a string",
    );
  });

  it("keeps a non-empty agent filter and decodes the page token", () => {
    const pageToken = encodeHeadPageToken({ updatedAt: 3, sessionId: "s" });
    expect(checkSessionQuery({ owner: "o", agent: "a", pageToken, now: 1 })).toEqual({
      owner: "o",
      agent: "a",
      pageSize: 50,
      now: 1,
      after: { updatedAt: 3, sessionId: "s" },
    });
  });
});
