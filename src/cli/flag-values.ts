import { UsageError } from "./usage-error.js";

/** `--cors-origin` values: repeatable and comma-separated; each `*` or an `http(s)://host[:port]` origin. */
export function corsOrigins(raw: readonly string[]): string[] {
  const origins = raw
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
  for (const origin of origins) {
    if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new UsageError(`--cors-origin must be "*" or an origin like https://app.example.com, got "${origin}"`);
    }
  }
  return origins;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration flag: a whole number with a unit (ms, s, m, h, d), e.g. `90s`, `7d`. */
export function duration(name: string, raw: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(raw.trim());
  if (!match) throw new UsageError(`--${name} must be a duration like 90s, 30m, 12h or 7d, got "${raw}"`);
  const ms = Number(match[1]) * DURATION_UNITS[match[2]!]!;
  if (ms < 1 || ms > 10 * 365 * 86_400_000)
    throw new UsageError(`--${name} must be between 1ms and 3650d, got "${raw}"`);
  return ms;
}

/** An instance name: 1–128 printable ASCII characters without spaces. */
export function instanceId(raw: string): string {
  if (!/^[\x21-\x7e]{1,128}$/.test(raw)) {
    throw new UsageError(`--instance-id must be 1 to 128 printable characters without spaces, got "${raw}"`);
  }
  return raw;
}

/** A whole-number flag between `min` and `max`. */
export function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`--${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}
