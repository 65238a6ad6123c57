import { AgentError } from "../../errors/agent-error.js";
import type { Message } from "../../types/content.js";
import type { Model } from "../../models/model.js";

/**
 * How much of the session history a prompt agent sends to its model each
 * call. The snapshots always keep the whole history; only what the model
 * reads is bounded. The system prompt (the rendered prompt's messages) is
 * always sent and not counted. Mode `trim` keeps the newest messages that fit
 * both limits and drops the older ones, never cutting between a model's tool
 * requests and their tool responses, and never dropping the current turn's
 * user message (so one turn's own tool rounds are always sent whole). Mode
 * `summarize` sends, instead of the dropped prefix, one system message with
 * its summary by `summaryModel`, cached in the history (the metadata of the
 * model message that followed it) and reused until more has to be dropped.
 */
export interface HistoryPolicy {
  /** Send at most this many history messages (the newest). */
  maxMessages?: number;
  /** Send at most this many estimated tokens of history (see {@link estimateTokens}). */
  maxTokens?: number;
  /** What happens to the older messages: `trim` (default) leaves them out; `summarize` sends their summary instead. */
  mode?: "trim" | "summarize";
  /** The model that summarises (mode `summarize`, required then): a model name or a Model. */
  summaryModel?: string | Model;
}

/**
 * A message's estimated token count: the characters of its JSON form
 * (content and metadata) divided by 4, rounded up. Providers' tokenizers
 * differ; this is a deliberately simple, stable, documented upper-bound-ish
 * estimate that needs no tokenizer.
 */
export function estimateTokens(message: Message): number {
  return Math.ceil(JSON.stringify(message).length / 4);
}

/**
 * `policy` checked: limits are whole numbers >= 1 and the mode is known.
 * Throws INVALID_ARGUMENT naming the agent (`where`) and the field.
 */
export function validateHistoryPolicy(policy: unknown, where: string): HistoryPolicy {
  if (policy === null || typeof policy !== "object" || Array.isArray(policy))
    throw new AgentError("INVALID_ARGUMENT", `${where}: history must be an object ({maxMessages, maxTokens, mode})`);
  const { maxMessages, maxTokens, mode, summaryModel, ...rest } = policy as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0)
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${where}: history has unknown field "${unknown[0]}" (expected maxMessages, maxTokens, mode, summaryModel)`,
    );
  for (const [name, value] of [
    ["maxMessages", maxMessages],
    ["maxTokens", maxTokens],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || (value as number) < 1))
      throw new AgentError("INVALID_ARGUMENT", `${where}: history.${name} must be a whole number >= 1, got ${value}`);
  }
  if (maxMessages === undefined && maxTokens === undefined)
    throw new AgentError("INVALID_ARGUMENT", `${where}: history needs maxMessages or maxTokens`);
  if (mode !== undefined && mode !== "trim" && mode !== "summarize")
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${where}: history.mode must be "trim" or "summarize", got ${JSON.stringify(mode)}`,
    );
  const model = typeof summaryModel === "string" && summaryModel !== "" ? summaryModel : (summaryModel as Model);
  if (mode === "summarize" && typeof model !== "string" && typeof model?.generate !== "function")
    throw new AgentError("INVALID_ARGUMENT", `${where}: history.mode "summarize" needs summaryModel (a model name)`);
  return {
    ...(maxMessages !== undefined ? { maxMessages: maxMessages as number } : {}),
    ...(maxTokens !== undefined ? { maxTokens: maxTokens as number } : {}),
    ...(mode === "summarize" ? { mode, summaryModel: model } : { mode: "trim" as const }),
  };
}

/**
 * The part of `history` the model is sent under `policy`: the newest
 * messages within both limits, starting no later than the last user message
 * and never at a `tool` message (its tool requests would be cut off). Costs
 * one pass over the kept messages (token estimates only for those).
 */
export function budgetedHistory(history: readonly Message[], policy: HistoryPolicy): readonly Message[] {
  const maxMessages = policy.maxMessages ?? Number.POSITIVE_INFINITY;
  const maxTokens = policy.maxTokens ?? Number.POSITIVE_INFINITY;
  let lastUser = history.length;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i]!.role === "user") {
      lastUser = i;
      break;
    }
  }
  let start = history.length;
  let tokens = 0;
  while (start > 0) {
    const next = history[start - 1]!;
    const cost = Number.isFinite(maxTokens) ? estimateTokens(next) : 0;
    const mustKeep = start - 1 >= lastUser;
    if (!mustKeep && (history.length - start + 1 > maxMessages || tokens + cost > maxTokens)) break;
    tokens += cost;
    start--;
  }
  while (start < history.length && start < lastUser && history[start]!.role === "tool") start++;
  return start === 0 ? history : history.slice(start);
}
