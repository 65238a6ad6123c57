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
  /**
   * Tenants tracked at once (their buckets and running invocations). A tenant
   * with nothing running and a full bucket is forgotten when room is needed
   * (that changes nothing: it would start from a full bucket anyway); while
   * this many tenants are busy, a new tenant's call gets RESOURCE_EXHAUSTED.
   * 0 = no cap (idle tenants are still forgotten).
   */
  maxTenants: number;
}

/** The defaults: generous for one client, finite so one tenant cannot take every core. */
export const DEFAULT_TENANT_LIMITS: Readonly<TenantLimitOptions> = Object.freeze({
  maxInvocations: 64,
  requestsPerSecond: 200,
  burst: 400,
  maxTenants: 10_000,
});

/** How long a tenant at its invocation limit, or a new tenant while every tracked one is busy, is told to wait. */
const INVOCATION_RETRY_MS = 1000;
/** Tracked tenants below which idle ones are never looked for. */
const MIN_SWEEP_SIZE = 1024;
/** While (nearly) every tracked tenant is busy, how often a new tenant's call looks for idle ones again. */
const FULL_SWEEP_INTERVAL_MS = 1000;

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
 * Memory is bounded: at most `maxTenants` tenants are tracked, idle ones
 * forgotten as new ones come (amortized O(1) per call).
 */
export class TenantLimits {
  private readonly usage = new Map<string, TenantUsage>();
  /** Tracked tenants at which a new tenant first makes idle ones be forgotten (doubles with the busy ones: amortized O(1)). */
  private sweepAt: number;
  private noSweepUntil = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly limits: Readonly<TenantLimitOptions>,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.sweepAt = Math.min(this.cap, MIN_SWEEP_SIZE);
  }

  /** `maxTenants`, or no cap for 0 (idle tenants are still forgotten). */
  private get cap(): number {
    return this.limits.maxTenants > 0 ? this.limits.maxTenants : Number.POSITIVE_INFINITY;
  }

  /**
   * Admits one call of `tenant`: an error when the tenant is over its rate or
   * (for an invocation) its concurrency; otherwise undefined, or for an
   * invocation the function releasing its slot.
   */
  admit(tenant: string, invocation: boolean): ConnectError | (() => void) | undefined {
    const usage = this.usageOf(tenant);
    if (!usage) {
      return resourceExhausted(
        `the server is at its limit of busy tenants (--max-tenants); tenant "${tenant}" can start calls once another tenant is idle`,
        INVOCATION_RETRY_MS,
      );
    }
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

  /** The usage of `tenant`, tracked from now on if new; undefined when it is new and every tracked tenant is busy. */
  private usageOf(tenant: string): TenantUsage | undefined {
    let usage = this.usage.get(tenant);
    if (usage) return usage;
    if (this.usage.size >= this.sweepAt) this.forgetIdle();
    if (this.usage.size >= this.cap) return undefined;
    usage = { invocations: 0, tokens: this.limits.burst, refilledAt: this.now() };
    this.usage.set(tenant, usage);
    return usage;
  }

  /**
   * Drops the tenants with nothing running and a full bucket (a fresh entry
   * is the same). After a sweep that left more than three quarters of the cap
   * busy, the next one waits a second (new tenants meanwhile take the room
   * left, or are refused), so busy tenants cost no sweep per call.
   */
  private forgetIdle(): void {
    const now = this.now();
    if (now < this.noSweepUntil) return;
    for (const [tenant, usage] of this.usage) if (this.idle(usage, now)) this.usage.delete(tenant);
    this.sweepAt = Math.min(this.cap, Math.max(MIN_SWEEP_SIZE, 2 * this.usage.size));
    this.noSweepUntil = this.usage.size > 0.75 * this.cap ? now + FULL_SWEEP_INTERVAL_MS : Number.NEGATIVE_INFINITY;
  }

  private idle(usage: TenantUsage, now: number): boolean {
    if (usage.invocations > 0) return false;
    const { requestsPerSecond, burst } = this.limits;
    return requestsPerSecond <= 0 || usage.tokens + ((now - usage.refilledAt) * requestsPerSecond) / 1000 >= burst;
  }
}
