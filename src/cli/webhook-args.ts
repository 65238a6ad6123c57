import { isLocalHostname } from "../runtime/webhooks/address-policy.js";

/** Makes the CLI's usage error (kept out of this module so it does not import args.ts). */
type UsageErrorFactory = (message: string) => Error;

/** The webhook flags of `agentd serve`, as given (files are read at start). */
export interface WebhookConfig {
  /** `--webhook-url`: where events go. */
  url: string;
  /** `--webhook-secret-file`: one `whsec_…` secret per line. */
  secretFile: string;
  /** `--webhook-allow-private`: allow private and loopback addresses. */
  allowPrivate: boolean;
  /** `--webhook-timeout`: one attempt's timeout (ms), when given. */
  timeoutMs?: number;
  /** `--webhook-retry-period`: how long a failing event is retried (ms), when given. */
  retryPeriodMs?: number;
}

/** The `parseArgs` options of the webhook flags. */
export const WEBHOOK_OPTIONS = {
  "webhook-url": { type: "string" },
  "webhook-secret-file": { type: "string" },
  "webhook-allow-private": { type: "boolean" },
  "webhook-timeout": { type: "string" },
  "webhook-retry-period": { type: "string" },
} as const;

/** The webhook part of `agentd --help`. */
export const WEBHOOK_USAGE = `Webhooks (see docs/webhooks.md):
  --webhook-url <url>         POST a signed event (Standard Webhooks) here when detached work ends
  --webhook-secret-file <file>
                              the signing secrets, one whsec_… per line (each signs every delivery:
                              add the new one, then remove the old one to rotate); needs --webhook-url
  --webhook-allow-private     allow a private or loopback webhook address (refused by default)
  --webhook-timeout <d>       one attempt's timeout (default 10s)
  --webhook-retry-period <d>  retry a failing event this long, then mark it failed (default 24h)
`;

/**
 * The webhook flags among `values`, checked: the URL is http(s) without
 * credentials, and URL and secret file go together. `duration` parses a
 * duration flag. Undefined when no webhook flag is given.
 */
export function webhookConfig(
  values: Record<string, unknown>,
  duration: (flag: string, raw: string) => number,
  usage: UsageErrorFactory,
): WebhookConfig | undefined {
  const url = values["webhook-url"];
  const secretFile = values["webhook-secret-file"];
  const others = ["webhook-allow-private", "webhook-timeout", "webhook-retry-period"].filter(
    (f) => values[f] !== undefined,
  );
  if (url === undefined && secretFile === undefined) {
    if (others.length > 0) throw usage(`--${others[0]} only applies with --webhook-url`);
    return undefined;
  }
  if (typeof url !== "string" || typeof secretFile !== "string" || url.trim() === "" || secretFile.trim() === "")
    throw usage("--webhook-url and --webhook-secret-file go together (every delivery is signed)");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usage(`--webhook-url must be an http(s) URL, got "${url}"`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw usage(`--webhook-url must be an http(s) URL, got "${parsed.protocol}"`);
  if (parsed.username || parsed.password)
    throw usage("--webhook-url must not carry credentials (deliveries are signed with --webhook-secret-file)");
  const allowPrivate = values["webhook-allow-private"] === true;
  if (!allowPrivate && isLocalHostname(parsed.hostname))
    throw usage(
      `--webhook-url ${parsed.host} is a loopback or private address, where agentd never delivers unless --webhook-allow-private is given (for a receiver on this machine or network)`,
    );
  const timeout = values["webhook-timeout"];
  const period = values["webhook-retry-period"];
  return {
    url: parsed.href,
    secretFile,
    allowPrivate,
    ...(typeof timeout === "string" ? { timeoutMs: duration("webhook-timeout", timeout) } : {}),
    ...(typeof period === "string" ? { retryPeriodMs: duration("webhook-retry-period", period) } : {}),
  };
}
