import type { Message } from "../../types/content.js";
import { budgetedHistory, type HistoryPolicy } from "./history-policy.js";

/** The metadata key of a model message that carries the history summary cached with it. */
export const SUMMARY_KEY = "agentd.historySummary";

/** A summary of the history's first `covers` messages, cached in the metadata of a model message. */
export interface CachedSummary {
  covers: number;
  text: string;
}

/** Summarises `messages` (after the summary of what came before them, if any) into one text. */
export type Summarizer = (messages: readonly Message[], previous: string | undefined) => Promise<string>;

/** What a model call is sent under a summarising policy, and a new summary to cache (when one was made). */
export interface SummarizedHistory {
  messages: readonly Message[];
  fresh?: CachedSummary;
}

/**
 * The history for a model call under a `summarize` policy: as `trim`, but
 * the left-out prefix is replaced by one system message holding its summary.
 * The summary of the latest model message that carries one is reused while
 * it covers at least what `trim` would leave out; otherwise a new one is made
 * (`summarize`: the previous summary plus the messages since) that covers
 * what `trim` would leave out at half the budget, so the next several turns
 * reuse it instead of summarising again. Returns `fresh` when it made one:
 * the caller caches it on the next model message it stores.
 */
export async function summarizedHistory(
  history: readonly Message[],
  policy: HistoryPolicy,
  summarize: Summarizer,
): Promise<SummarizedHistory> {
  const cut = history.length - budgetedHistory(history, policy).length;
  if (cut === 0) return { messages: history };
  const cached = latestSummary(history);
  if (cached && cached.covers >= cut && cached.covers <= history.length) {
    return { messages: [summaryMessage(cached.text), ...history.slice(cached.covers)] };
  }
  const covers = history.length - budgetedHistory(history, halved(policy)).length;
  const from = cached && cached.covers < covers ? cached.covers : 0;
  const text = await summarize(history.slice(from, covers), from > 0 ? cached!.text : undefined);
  const fresh = { covers, text };
  return { messages: [summaryMessage(text), ...history.slice(covers)], fresh };
}

/** `message` with `summary` cached in its metadata (a new object). */
export function withSummary(message: Message, summary: CachedSummary): Message {
  return { ...message, metadata: { ...message.metadata, [SUMMARY_KEY]: summary } };
}

/** The summary cached on the latest model message that carries one, if any. */
function latestSummary(history: readonly Message[]): CachedSummary | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const value = history[i]!.metadata?.[SUMMARY_KEY] as Partial<CachedSummary> | undefined;
    if (value && typeof value.covers === "number" && typeof value.text === "string")
      return { covers: value.covers, text: value.text };
  }
  return undefined;
}

function summaryMessage(text: string): Message {
  return { role: "system", content: [{ text: `Summary of the earlier conversation: ${text}` }] };
}

function halved(policy: HistoryPolicy): HistoryPolicy {
  return {
    ...(policy.maxMessages !== undefined ? { maxMessages: Math.max(1, Math.floor(policy.maxMessages / 2)) } : {}),
    ...(policy.maxTokens !== undefined ? { maxTokens: Math.max(1, Math.floor(policy.maxTokens / 2)) } : {}),
  };
}
