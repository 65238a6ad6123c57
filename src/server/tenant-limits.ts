import type { ConnectError } from "@connectrpc/connect";
import { resourceExhausted } from "./retry-info.js";

/** How much of the server one tenant may use at once (0 = unlimited). */
export interface TenantLimitOptions {
  /** Invocations (Run, RunStream, Chat) one tenant may have running at once. */
  maxInvocations: number;
  /** Calls per second one tenant may start, on average (a token bucket). */
  requestsPerSecond: number;
  /** Calls one tenant may start in a burst above the rate (the bucket's size). */
  burst: number;
}

/** The defaults: generous for one client, finite so one tenant cannot take every core. */
export const DEFAULT_TENANT_LIMITS: Readonly<TenantLimitOptions> = Object.freeze({
  maxInvocations: 64,
  requestsPerSecond: 200,
  burst: 400,
});

/** How long a tenant at its invocation limit is told to wait before retrying. */
const INVOCATION_RETRY_MS = 1000;

interface TenantUsage {
  invocations: number;
  tokens: number;
  refilledAt: number;
}

/**
 * Per-tenant admission: a token bucket on the calls a tenant starts and a
 * cap on its concurrent invocations. {@link admit} either returns (and, for
 * an invocation, a release function to call exactly once when it ends) or
 * gives the RESOURCE_EXHAUSTED error to fail the call with, carrying
 * `google.rpc.RetryInfo` with when to retry. Other tenants are unaffected.
 */
export class TenantLimits {
  private readonly usage = new Map<string, TenantUsage>();

  constructor(
    private readonly limits: Readonly<TenantLimitOptions>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Admits one call of `tenant`: an error when the tenant is over its rate or
   * (for an invocation) its concurrency; otherwise undefined, or for an
   * invocation the function releasing its slot.
   */
  admit(tenant: string, invocation: boolean): ConnectError | (() => void) | undefined {
    const usage = this.usageOf(tenant);
    const { requestsPerSecond, burst, maxInvocations } = this.limits;
    if (requestsPerSecond > 0) {
      const now = this.now();
      usage.tokens = Math.min(burst, usage.tokens + ((now - usage.refilledAt) * requestsPerSecond) / 1000);
      usage.refilledAt = now;
      if (usage.tokens < 1) {
        const waitMs = ((1 - usage.tokens) * 1000) / requestsPerSecond;
        return resourceExhausted(
          `tenant "${tenant}" is over its request rate (${requestsPerSecond}/s, bursts of ${burst})`,
          waitMs,
        );
      }
    }
    if (invocation && maxInvocations > 0 && usage.invocations >= maxInvocations) {
      return resourceExhausted(
        `tenant "${tenant}" already has ${usage.invocations} invocations running (at most ${maxInvocations} at once)`,
        INVOCATION_RETRY_MS,
      );
    }
    if (requestsPerSecond > 0) usage.tokens -= 1;
    if (!invocation) return undefined;
    usage.invocations++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      usage.invocations--;
    };
  }

  /** Invocations `tenant` has running. */
  running(tenant: string): number {
    return this.usage.get(tenant)?.invocations ?? 0;
  }

  private usageOf(tenant: string): TenantUsage {
    let usage = this.usage.get(tenant);
    if (!usage) {
      usage = { invocations: 0, tokens: this.limits.burst, refilledAt: this.now() };
      this.usage.set(tenant, usage);
    }
    return usage;
  }
}
