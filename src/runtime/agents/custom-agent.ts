import { AgentError } from "../../errors/agent-error.js";
import { Agent, type AgentDefinition } from "./agent.js";
import type { AgentFn, TurnFn } from "./agent-function.js";

/** A custom agent: either the whole invocation (`run`) or one turn at a time (`turn`). */
export type CustomAgentDefinition<S> = AgentDefinition<S> &
  ({ run: AgentFn<S>; turn?: never } | { turn: TurnFn<S>; run?: never });

/**
 * Defines an agent whose turn loop you own. With `turn`, the runtime runs the
 * loop and calls it once per input; with `run`, you call
 * `ctx.session.run(...)` yourself and may return an {@link AgentResult}. The
 * agent is not registered: export it from an agents module for `agentd serve`,
 * or add it to an AgentRegistry.
 */
export function defineCustomAgent<S = unknown>(definition: CustomAgentDefinition<S>): Agent<S> {
  if (definition.run && definition.turn) throw new AgentError("INVALID_ARGUMENT", "set either run or turn, not both");
  if (definition.run) return new Agent(definition, definition.run);
  const turn = definition.turn;
  if (!turn)
    throw new AgentError(
      "INVALID_ARGUMENT",
      `custom agent "${(definition as AgentDefinition<S>).name}" needs a run or turn function`,
    );
  return new Agent(definition, agentFnFromTurns(turn));
}

/**
 * The whole-invocation function that runs `turn` once per input through the
 * session's turn loop (after `ready` settles, when given; a rejection fails the
 * invocation in-band) and returns the session's default result.
 */
export function agentFnFromTurns<S>(turn: TurnFn<S>, ready?: Promise<void>): AgentFn<S> {
  return async (ctx) => {
    if (ready) await ready;
    await ctx.session.run((input, turnContext) =>
      turn(input, { ...ctx, signal: turnContext.signal, turn: turnContext }),
    );
    return ctx.session.result();
  };
}
