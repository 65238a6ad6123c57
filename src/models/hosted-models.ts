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
  return new AgentError(
    "FAILED_PRECONDITION",
    `model "${model}" needs an API key: set the ${variable} environment variable${extra}`,
    {
      details: { model, envVar: variable },
    },
  );
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
 * Throws AgentError FAILED_PRECONDITION naming the variable when a key is
 * missing, or when the provider package refuses its environment (the
 * packages read e.g. `OPENAI_BASE_URL` when imported, so they are imported
 * here, on the first call, never at start-up).
 */
export async function createHostedLanguageModel(
  provider: HostedProvider,
  modelId: string,
  source: NodeJS.ProcessEnv = process.env,
): Promise<LanguageModel> {
  const name = `${provider}/${modelId}`;
  switch (provider) {
    case "openai": {
      const baseURL = env("OPENAI_BASE_URL", source);
      const apiKey = env("OPENAI_API_KEY", source);
      if (!apiKey && !baseURL)
        throw missingKey(name, "OPENAI_API_KEY", " (or OPENAI_BASE_URL for a self-hosted OpenAI-compatible server)");
      const { createOpenAI } = await importProvider(
        name,
        "@ai-sdk/openai",
        () => import("@ai-sdk/openai"),
        "OPENAI_BASE_URL",
      );
      return createOpenAI({ apiKey: apiKey ?? "unused", ...(baseURL ? { baseURL } : {}) }).chat(modelId);
    }
    case "google": {
      const apiKey = env("GOOGLE_GENERATIVE_AI_API_KEY", source) ?? env("GEMINI_API_KEY", source);
      if (!apiKey) throw missingKey(name, "GOOGLE_GENERATIVE_AI_API_KEY", " (or GEMINI_API_KEY)");
      const baseURL = env("GOOGLE_GENERATIVE_AI_BASE_URL", source);
      const { createGoogleGenerativeAI } = await importProvider(
        name,
        "@ai-sdk/google",
        () => import("@ai-sdk/google"),
        "GOOGLE_GENERATIVE_AI_BASE_URL",
      );
      return createGoogleGenerativeAI({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId);
    }
    case "anthropic": {
      const apiKey = env("ANTHROPIC_API_KEY", source);
      if (!apiKey) throw missingKey(name, "ANTHROPIC_API_KEY");
      const baseURL = env("ANTHROPIC_BASE_URL", source);
      const { createAnthropic } = await importProvider(
        name,
        "@ai-sdk/anthropic",
        () => import("@ai-sdk/anthropic"),
        "ANTHROPIC_BASE_URL",
      );
      return createAnthropic({ apiKey, ...(baseURL ? { baseURL } : {}) })(modelId);
    }
  }
}

async function importProvider<T>(
  model: string,
  pkg: string,
  load: () => Promise<T>,
  baseUrlVariable: string,
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `model "${model}": ${pkg} refused its environment (${(err as Error).message}); check ${baseUrlVariable}: unset it, or set a URL such as http://127.0.0.1:11434/v1`,
      { cause: err },
    );
  }
}

/** A hosted model by `provider/modelId`, or undefined when the name has no known provider prefix. */
export function hostedModel(name: string, source: NodeJS.ProcessEnv = process.env): AiSdkModel | undefined {
  const slash = name.indexOf("/");
  if (slash <= 0 || slash === name.length - 1) return undefined;
  const provider = name.slice(0, slash);
  if (!(HOSTED_PROVIDERS as readonly string[]).includes(provider)) return undefined;
  return new AiSdkModel(name, () =>
    createHostedLanguageModel(provider as HostedProvider, name.slice(slash + 1), source),
  );
}
