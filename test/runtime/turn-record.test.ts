// The session size cap of stateFieldsFor: a state of exactly the limit is written, one byte
// over is refused with RESOURCE_EXHAUSTED naming the session, the size and the limit.
import { describe, expect, it } from "vitest";
import { expectThrowsAgentError } from "./runtime-fixtures.js";
import { DEFAULT_RECORD_SETTINGS, stateFieldsFor } from "../../src/runtime/sessions/turn-record.js";
import { userText } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";

const state: SessionState = { sessionId: "s1", messages: [userText("hello")], artifacts: [] };
/** A first record of `state` is a checkpoint of its JSON. */
const bytes = JSON.stringify(state).length;
const capped = (maxSessionBytes: number) => ({ ...DEFAULT_RECORD_SETTINGS, maxSessionBytes });

describe("stateFieldsFor: the session size cap", () => {
  it("accepts a state of exactly the limit", () => {
    const fields = stateFieldsFor(undefined, state, 0, capped(bytes));
    expect(fields.checkpointBytes + fields.deltaBytes).toBe(bytes);
  });

  it("refuses a state one byte over the limit, naming the session, its size and the limit", () => {
    const error = expectThrowsAgentError(
      () => stateFieldsFor(undefined, state, 0, capped(bytes - 1)),
      "RESOURCE_EXHAUSTED",
    );
    expect(error.message).toBe(
      `session "s1" would grow to ${bytes} bytes, over the limit of ${bytes - 1} (--max-session-bytes); ` +
        "nothing was written. Start a new session or trim the history",
    );
    expect(error.details).toEqual({ sessionBytes: bytes, maxSessionBytes: bytes - 1 });
  });

  it('names a session without an ID as "" in the refusal', () => {
    const unnamed: SessionState = { messages: [userText("hello")], artifacts: [] };
    const size = JSON.stringify(unnamed).length;
    const error = expectThrowsAgentError(
      () => stateFieldsFor(undefined, unnamed, 0, capped(size - 1)),
      "RESOURCE_EXHAUSTED",
    );
    expect(error.message).toMatch(/^session "" would grow to /);
  });
});
