import { AgentError } from "../errors/agent-error.js";
import type { Model } from "../models/model.js";
import type { Tool } from "../tools/define-tool.js";
import { DEFAULT_MAX_TOOL_ITERATIONS, runToolLoop } from "../tools/tool-loop.js";
import type { Message } from "../types/content.js";
import { Agent, type AgentDefinition } from "../runtime/agents/agent.js";
import { validateHistoryPolicy, type HistoryPolicy } from "../runtime/agents/history-policy.js";
import { agentFnFromTurns } from "../runtime/agents/custom-agent.js";

/** Options every prompt-backed agent takes besides the agent options. */
export interface PromptBackedOptions {
  /** Tools the model may call. */
  tools?: Tool[];
  /** Tool rounds allowed per turn (default {@link DEFAULT_MAX_TOOL_ITERATIONS}); one more fails the turn in-band. */
  maxToolIterations?: number;
  /**
   * Bounds the history sent to the model each call (by messages and/or
   * estimated tokens; the snapshots keep all of it); see {@link HistoryPolicy}.
   * A prompt agent's front matter may set it as `history:`; this overrides it.
   */
  history?: HistoryPolicy;
}

/** An agent defined by an inline prompt: model, system text, config and tools. */
export interface InlineAgentDefinition<S> extends AgentDefinition<S>, PromptBackedOptions {
  /** A model name (`echo`, `scripted`, `openai/gpt-4o-mini`, …) or a Model instance. */
  model: string | Model;
  /** System text sent before the history each turn (never stored); a function sees the current custom state. */
  system?: string | ((custom: S | undefined) => string);
  /** Generation config (see ModelRequest.config). */
  config?: Record<string, unknown>;
}

/** The tool rounds allowed per turn: `value` or the default; INVALID_ARGUMENT naming the agent unless a whole number >= 0. */
export function maxIterations(value: number | undefined, name: string): number {
  const max = value ?? DEFAULT_MAX_TOOL_ITERATIONS;
  if (!Number.isInteger(max) || max < 0)
    throw new AgentError(
      "INVALID_ARGUMENT",
      `agent "${name}": maxToolIterations must be a whole number >= 0, got ${value}`,
    );
  return max;
}

/** INVALID_ARGUMENT naming the agent unless every tool comes from defineTool and their names differ. */
export function checkToolNames(tools: Tool[], name: string): void {
  const seen = new Set<string>();
  for (const tool of tools) {
    if (tool?.__agentdTool !== true)
      throw new AgentError("INVALID_ARGUMENT", `agent "${name}": tools must be defined with defineTool`);
    if (seen.has(tool.name))
      throw new AgentError("INVALID_ARGUMENT", `agent "${name}": two tools are named "${tool.name}"`);
    seen.add(tool.name);
  }
}

/**
 * Defines an agent from an inline prompt. Each turn sends the system text
 * (not stored) then the session history to the model, runs the tools it
 * requests (bounded by `maxToolIterations`), streams the model's chunks,
 * appends its messages to the history and ends with its finish reason
 * (`interrupted` when a tool interrupted; continue with `input.resume`).
 */
export function defineAgent<S = unknown>(definition: InlineAgentDefinition<S>): Agent<S> {
  const tools = definition.tools ?? [];
  checkToolNames(tools, definition.name);
  const max = maxIterations(definition.maxToolIterations, definition.name);
  const history = definition.history
    ? validateHistoryPolicy(definition.history, `agent "${definition.name}"`)
    : undefined;
  if (!definition.model)
    throw new AgentError(
      "INVALID_ARGUMENT",
      `agent "${definition.name}" needs a model (e.g. "echo" or "openai/gpt-4o-mini")`,
    );
  return new Agent(
    definition,
    agentFnFromTurns<S>((input, ctx) => {
      const system =
        typeof definition.system === "function" ? definition.system(ctx.session.custom()) : definition.system;
      const prelude: Message[] = system ? [{ role: "system", content: [{ text: system }] }] : [];
      return runToolLoop(input, ctx, {
        model: ctx.model(definition.model),
        prelude,
        tools,
        ...(definition.config ? { config: definition.config } : {}),
        maxToolIterations: max,
        ...(history ? { history } : {}),
      });
    }),
  );
}
