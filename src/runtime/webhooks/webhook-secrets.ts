import { readFileSync } from "node:fs";

/** The prefix of a Standard Webhooks signing secret. */
export const SECRET_PREFIX = "whsec_";

/**
 * Parses the signing secrets of `--webhook-secret-file`: one `whsec_<base64>`
 * per non-empty line (several: every one signs each delivery, for rotation).
 * Throws an Error naming the file and the line number, never a secret.
 */
export function parseWebhookSecrets(text: string, source: string): Buffer[] {
  const keys: Buffer[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const encoded = line.startsWith(SECRET_PREFIX) ? line.slice(SECRET_PREFIX.length) : "";
    const key = Buffer.from(encoded, "base64");
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length < 24 || key.length > 64)
      throw new Error(
        `${source} line ${index + 1}: not a webhook secret (expected whsec_ followed by 24 to 64 base64-encoded bytes)`,
      );
    keys.push(key);
  });
  if (keys.length === 0) throw new Error(`${source}: no webhook secret (one whsec_… per line)`);
  return keys;
}

/** Reads and parses `--webhook-secret-file`; errors name the file, never its content. */
export function readWebhookSecrets(file: string): Buffer[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(
      `--webhook-secret-file ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      { cause: err },
    );
  }
  return parseWebhookSecrets(text, `--webhook-secret-file ${file}`);
}
