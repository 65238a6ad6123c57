import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import type { LanguageModel } from "ai";
import { AgentError } from "../errors/agent-error.js";
import { AiSdkModel } from "./ai-sdk-model.js";

/** The hosted model providers `provider/model` names can use. */
export const HOSTED_PROVIDERS = ["openai", "google", "anthropic"] as const;

/** One of {@link HOSTED_PROVIDERS}. */
export type HostedProvider = (typeof HOSTED_PROVIDERS)[number];

function env(name: string, source: NodeJS.ProcessEnv): string | undefined {
  const value = source[name]?.trim();
  return value ? value : undefined;
}

function missingKey(model: string, variable: string, extra = ""): AgentError {
  return new AgentError("FAILED_PRECONDITION", `model "${model}" needs an API key: set the ${variable} environment variable${extra}`, {
    details: { model, envVar: variable },
  });
}

/**
 * The provider model for `provider/modelId`, configured from the environment
 * when called (never at import):
 *
 * - `openai`: the Chat Completions API at `OPENAI_BASE_URL` (default
 *   https://api.openai.com/v1), key `OPENAI_API_KEY` — optional when
 *   `OPENAI_BASE_URL` points at a self-hosted OpenAI-compatible server;
 * - `google`: `GOOGLE_GENERATIVE_AI_API_KEY` (or `GEMINI_API_KEY`), base URL
 *   `GOOGLE_GENERATIVE_AI_BASE_URL`;
 * - `anthropic`: `ANTHROPIC_API_KEY`, base URL `ANTHROPIC_BASE_URL`.
 *
 * Throws AgentError FAILED_PRECONDITION naming the variable when a key is missing.
 */
export function createHostedLanguageModel(provider: HostedProvider, modelId: string, source: NodeJS.ProcessEnv = process.env): LanguageModel {
  const name = `${provider}/${modelId}`;
  switch (provider) {
    case "openai": {
      const baseURL = env("OPENAI_BASE_URL", source);
      const apiKey = env("OPENAI_API_KEY", source);
      if (!apiKey && !baseURL) throw missingKey(name, "OPENAI_API_KEY", " (or OPENAI_BASE_URL for a self-hosted OpenAI-compatible server)");
      return createOpenAI({ apiKey: apiKey ?? "unused", ...(baseURL ? { baseURL } : {}) }).chat(modelId);
    }
    case "google": {
      const apiKey = env("GOOGLE_GENERATIVE_AI_API_KEY", source) ?? env("GEMINI_API_KEY", source);
      if (!apiKey) throw missingKey(name, "GOOGLE_GENERATIVE_AI_API_KEY", " (or GEMINI_API_KEY)");
      const baseURL = env("GOOGLE_GENERATIVE_AI_BASE_URL", source);
      return createGoogleGenerativeAI({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId);
    }
    case "anthropic": {
      const apiKey = env("ANTHROPIC_API_KEY", source);
      if (!apiKey) throw missingKey(name, "ANTHROPIC_API_KEY");
      const baseURL = env("ANTHROPIC_BASE_URL", source);
      return createAnthropic({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId);
    }
  }
}

/** A hosted model by `provider/modelId`, or undefined when the name has no known provider prefix. */
export function hostedModel(name: string, source: NodeJS.ProcessEnv = process.env): AiSdkModel | undefined {
  const slash = name.indexOf("/");
  if (slash <= 0 || slash === name.length - 1) return undefined;
  const provider = name.slice(0, slash);
  if (!(HOSTED_PROVIDERS as readonly string[]).includes(provider)) return undefined;
  return new AiSdkModel(name, () => createHostedLanguageModel(provider as HostedProvider, name.slice(slash + 1), source));
}
