/** Environment variables whose values are provider credentials. */
export const PROVIDER_KEY_VARIABLES = [
  "OPENAI_API_KEY",
  "ANTHROPIC_API_KEY",
  "GOOGLE_GENERATIVE_AI_API_KEY",
  "GEMINI_API_KEY",
] as const;

/** What replaces key material in a message. */
export const REDACTED = "[redacted]";

/**
 * Shapes of key material in provider messages: OpenAI/Anthropic `sk-…` keys
 * (also partly masked with `*`), Google `AIza…` keys, a bearer credential,
 * `key=`/`api_key=` parameters, and any run of 4+ `*` with what is glued to
 * it (a masked key such as `sk-proj-****abcd`).
 */
const KEY_PATTERNS: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_*-]{3,}/g,
  /\bAIza[A-Za-z0-9_*-]{8,}/g,
  /\b(?:bearer|basic)\s+[A-Za-z0-9._~+/*=-]{8,}/gi,
  /\b((?:api[_-]?)?key|token|secret|password)=[^\s&"']+/gi,
  /[A-Za-z0-9_-]*\*{4,}[A-Za-z0-9_*-]*/g,
];

/** Fragments of a known secret shorter than this are left alone (too likely to be ordinary words). */
const MIN_FRAGMENT = 6;

/**
 * `text` with key material replaced by {@link REDACTED}: the known shapes
 * above, the whole value of every secret in `secrets`, and any word of 6+
 * characters that is a piece of one of them (providers echo a key's first or
 * last characters). Keeps the rest of the message, so the status and a useful
 * reason still reach the caller.
 */
export function scrubSecrets(text: string, secrets: readonly string[] = providerKeys()): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= MIN_FRAGMENT) out = out.split(secret).join(REDACTED);
  for (const pattern of KEY_PATTERNS) {
    out = out.replace(pattern, (_match, name: unknown) =>
      typeof name === "string" ? `${name}=${REDACTED}` : REDACTED,
    );
  }
  const pieces = secrets.filter((s) => s.length >= MIN_FRAGMENT);
  if (pieces.length === 0) return out;
  return out.replace(/[A-Za-z0-9_-]{6,}/g, (word) => (pieces.some((s) => s.includes(word)) ? REDACTED : word));
}

/**
 * The provider keys set in this process's environment, as the providers get
 * them (trimmed, like the model factories read them): a key of any shape is
 * then scrubbed by value, not only the built-in shapes.
 */
export function providerKeys(env: NodeJS.ProcessEnv = process.env): string[] {
  return PROVIDER_KEY_VARIABLES.map((name) => env[name]?.trim()).filter(
    (v): v is string => typeof v === "string" && v !== "",
  );
}
