import { expect } from "vitest";
import { AgentError, type StatusName } from "../../src/errors/agent-error.js";

/** Asserts that `fn` throws an AgentError of `status` synchronously (and, if given, a message matching `message`). */
export function expectThrowsAgentError(fn: () => unknown, status: StatusName, message?: RegExp | string): AgentError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, "expected a throw").toBeInstanceOf(AgentError);
  const error = caught as AgentError;
  expect(error.status).toBe(status);
  if (message !== undefined) expect(error.message).toMatch(message);
  return error;
}
