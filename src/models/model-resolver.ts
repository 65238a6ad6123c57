import { AgentError } from "../errors/agent-error.js";
import { EchoModel } from "./echo-model.js";
import type { Model } from "./model.js";

/** Settings the built-in models read. */
export interface ModelSettings {
  /** Per-chunk delay of the offline echo model (ms). */
  echoDelayMs?: number;
}

/** Looks a model up by name; throws AgentError NOT_FOUND for unknown names. */
export type ModelResolver = (name: string) => Model;

/** A resolver for the built-in models (`echo`). */
export function builtinModelResolver(settings: ModelSettings = {}): ModelResolver {
  const echo = new EchoModel({ delayMs: settings.echoDelayMs ?? 0 });
  return (name) => {
    if (name === "echo") return echo;
    throw new AgentError("NOT_FOUND", `unknown model "${name}": available models are: echo`);
  };
}
