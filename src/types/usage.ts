/**
 * Model tokens, as the model provider reported them (the offline echo model
 * reports deterministic word counts). Mirrors `agentd.v1.Usage`.
 */
export interface Usage {
  /** Tokens read by the model (prompt, history, tool results). */
  inputTokens: number;
  /** Tokens the model generated. */
  outputTokens: number;
  /** `inputTokens + outputTokens` unless the provider reported its own total. */
  totalTokens: number;
}

/** `a + b`, field by field; `undefined` stands for no usage reported (so `undefined + undefined` stays undefined). */
export function addUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!a) return b ? { ...b } : undefined;
  if (!b) return { ...a };
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

/**
 * A usage from possibly-missing provider figures: undefined when neither input
 * nor output tokens are known; a missing total is input + output.
 */
export function usageOf(input: number | undefined, output: number | undefined, total?: number): Usage | undefined {
  if (input === undefined && output === undefined && total === undefined) return undefined;
  const inputTokens = nonNegative(input);
  const outputTokens = nonNegative(output);
  return {
    inputTokens,
    outputTokens,
    totalTokens: total !== undefined ? nonNegative(total) : inputTokens + outputTokens,
  };
}

function nonNegative(value: number | undefined): number {
  return value !== undefined && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}
