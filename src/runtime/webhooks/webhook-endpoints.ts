import { AgentError } from "../../errors/agent-error.js";
import { displayUrl } from "./webhook-event.js";
import { parseWebhookSecrets } from "./webhook-secrets.js";

/** A tenant's own webhook endpoint, as an agents module's `webhookEndpoint` export returns it. */
export interface WebhookEndpoint {
  /** Where the tenant's events go (http or https, no credentials). */
  url: string;
  /** Its signing secrets (`whsec_…`); each signs every delivery. */
  secrets: readonly string[];
}

/**
 * An agents module's `export function webhookEndpoint(tenant)`: the tenant's
 * own endpoint, or undefined/null for the server's (`--webhook-url`). Called
 * when an event is queued and before every attempt (so a changed endpoint or
 * rotated secret applies to the next attempt); may be async.
 */
export type WebhookEndpointHook = (
  tenant: string,
) => WebhookEndpoint | undefined | null | Promise<WebhookEndpoint | undefined | null>;

/** Where one event goes now: the URL, its display form (listed and logged) and the signing keys. */
export interface ResolvedEndpoint {
  url: URL;
  display: string;
  keys: readonly Buffer[];
}

/**
 * The endpoint of each tenant: the module hook's answer when it gives one,
 * else the server's. A hook that throws, or answers with a bad URL or
 * secret, fails with FAILED_PRECONDITION naming the tenant (never a secret);
 * the attempt then counts as failed and is retried.
 */
export class WebhookEndpoints {
  constructor(
    private readonly fallback: ResolvedEndpoint,
    private readonly hook?: WebhookEndpointHook,
  ) {}

  /** The endpoint of `tenant`'s events. */
  async resolve(tenant: string): Promise<ResolvedEndpoint> {
    if (!this.hook) return this.fallback;
    let answer: WebhookEndpoint | undefined | null;
    try {
      answer = await this.hook(tenant);
    } catch {
      throw new AgentError("FAILED_PRECONDITION", `the webhookEndpoint hook failed for tenant "${tenant}"`);
    }
    if (!answer) return this.fallback;
    let url: URL;
    try {
      url = new URL(answer.url);
    } catch {
      throw new AgentError("FAILED_PRECONDITION", `the webhookEndpoint of tenant "${tenant}" is not a URL`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password)
      throw new AgentError(
        "FAILED_PRECONDITION",
        `the webhookEndpoint of tenant "${tenant}" must be an http(s) URL without credentials`,
      );
    let keys: Buffer[];
    try {
      keys = parseWebhookSecrets((answer.secrets ?? []).join("\n"), `the webhookEndpoint of tenant "${tenant}"`);
    } catch (err) {
      throw new AgentError("FAILED_PRECONDITION", (err as Error).message);
    }
    return { url, display: displayUrl(url), keys };
  }
}
