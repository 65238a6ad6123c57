import { expect } from "vitest";
import { AgentError, type StatusName } from "../../src/errors/agent-error.js";

/** Asserts that `caught` is an AgentError of `status` (and, if given, with a message matching `message`). */
function expectAgentErrorValue(
  caught: unknown,
  what: string,
  status: StatusName,
  message: RegExp | string | undefined,
): AgentError {
  expect(caught, what).toBeInstanceOf(AgentError);
  const error = caught as AgentError;
  expect(error.status).toBe(status);
  if (message !== undefined) expect(error.message).toMatch(message);
  return error;
}

/** Asserts that `fn` throws an AgentError of `status` synchronously (and, if given, a message matching `message`). */
export function expectThrowsAgentError(fn: () => unknown, status: StatusName, message?: RegExp | string): AgentError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  return expectAgentErrorValue(caught, "expected a throw", status, message);
}

/** Asserts that `promise` rejects with an AgentError of `status` (and, if given, a message matching `message`). */
export async function expectAgentError(
  promise: Promise<unknown>,
  status: StatusName,
  message?: RegExp | string,
): Promise<AgentError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  return expectAgentErrorValue(caught, "expected a rejection", status, message);
}
