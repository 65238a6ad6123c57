import type { AgentOutput } from "../types/agent-io.js";

/** An output whose message text is at least this many UTF-16 code units is encoded in an event-loop turn of its own. */
export const LARGE_OUTPUT_CHARS = 256 * 1024;

/**
 * Before a large output is encoded (megabytes of protobuf or JSON in one
 * synchronous step), lets the event loop serve the I/O that waited while the
 * invocation finished (committing and shaping it were one step too):
 * resolves in a later event-loop turn when the output's message text is
 * {@link LARGE_OUTPUT_CHARS} or longer; returns undefined otherwise (a
 * normal output costs no hop).
 */
export function beforeLargeOutput(output: AgentOutput<unknown>): Promise<void> | undefined {
  if (messageChars(output) < LARGE_OUTPUT_CHARS) return undefined;
  return new Promise((resolve) => setImmediate(resolve));
}

function messageChars(output: AgentOutput<unknown>): number {
  let chars = 0;
  for (const part of output.message?.content ?? []) chars += part.text?.length ?? 0;
  return chars;
}
