import { AgentError } from "../errors/agent-error.js";
import { EchoModel } from "./echo-model.js";
import { hostedModel, HOSTED_PROVIDERS } from "./hosted-models.js";
import type { Model } from "./model.js";
import { ScriptedModel } from "./scripted-model.js";

/** Settings the built-in models read. */
export interface ModelSettings {
  /** Per-chunk delay of the offline echo model (ms). */
  echoDelayMs?: number;
  /** Environment hosted providers read keys and base URLs from (default `process.env`, read at call time). */
  env?: NodeJS.ProcessEnv;
}

/** Looks a model up by name; throws AgentError NOT_FOUND for unknown names. */
export type ModelResolver = (name: string) => Model;

/**
 * A resolver for the built-in models: `echo` and `scripted` (offline), and
 * `openai/<model>`, `google/<model>`, `anthropic/<model>` (hosted, through the
 * AI SDK; keys are checked on the first call, not here). The same name
 * resolves to the same instance.
 */
export function builtinModelResolver(settings: ModelSettings = {}): ModelResolver {
  const echo = new EchoModel({ delayMs: settings.echoDelayMs ?? 0 });
  const scripted = new ScriptedModel();
  const hosted = new Map<string, Model>();
  return (name) => {
    if (name === "echo") return echo;
    if (name === "scripted") return scripted;
    const cached = hosted.get(name);
    if (cached) return cached;
    const model = hostedModel(name, settings.env ?? process.env);
    if (model) {
      hosted.set(name, model);
      return model;
    }
    throw new AgentError(
      "NOT_FOUND",
      `unknown model "${name}": available models are echo, scripted and ${HOSTED_PROVIDERS.map((p) => `${p}/<model>`).join(", ")}`,
    );
  };
}
