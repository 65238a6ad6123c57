import { expect } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";

/** The AgentError `fn` throws; fails the test when it throws something else or nothing. */
export function thrown(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    return err as AgentError;
  }
  throw new Error("expected an AgentError");
}
