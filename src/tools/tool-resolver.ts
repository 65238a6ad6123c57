import type { Tool } from "./define-tool.js";

/**
 * Tools an agent names by reference (e.g. `weather/forecast` or `weather/*`
 * of an MCP server) rather than defines: a prompt's `tools:` entries with a
 * `/` are resolved here at every turn.
 */
export interface ToolResolver {
  /** Whether `name` is a reference this resolver answers. */
  handles(name: string): boolean;
  /** Throws AgentError INVALID_ARGUMENT when `ref` can never resolve (e.g. an unknown server); `where` names the prompt. */
  check(ref: string, where: string): void;
  /** The tools of `refs`, in order; rejects AgentError (UNAVAILABLE, INVALID_ARGUMENT) naming what failed. */
  resolve(refs: readonly string[], where: string): Promise<Tool[]>;
}
