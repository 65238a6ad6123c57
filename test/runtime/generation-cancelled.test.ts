import { describe, expect, it } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import { EchoModel } from "../../src/models/echo-model.js";
import { userText } from "../../src/types/content.js";

// A model whose signal aborts reports why the work was stopped: the abort's AgentError (a detached
// run stopped by the store's UNAVAILABLE, a takeover's ABORTED), or CANCELLED when no reason says more.
describe("a model call whose signal aborts", () => {
  const generate = (work: AbortController): Promise<unknown> =>
    new EchoModel({ delayMs: 20 }).generate(
      { messages: [userText("one two three four five six")] },
      {
        signal: work.signal,
        onChunk: () => {
          work.abort(new AgentError("UNAVAILABLE", "MongoDB appending chunks failed: connect ECONNREFUSED"));
        },
      },
    );

  it("rejects with the abort's AgentError reason (the store's UNAVAILABLE), not CANCELLED", async () => {
    await expect(generate(new AbortController())).rejects.toMatchObject({
      status: "UNAVAILABLE",
      message: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("rejects CANCELLED 'generation cancelled' when the abort carries no AgentError", async () => {
    const work = new AbortController();
    work.abort();
    await expect(
      new EchoModel().generate({ messages: [userText("hi")] }, { signal: work.signal }),
    ).rejects.toMatchObject({ status: "CANCELLED", message: "generation cancelled" });
  });
});
