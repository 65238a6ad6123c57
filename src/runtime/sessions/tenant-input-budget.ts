import { AgentError } from "../../errors/agent-error.js";

/**
 * The bytes of waiting inputs (queued turn inputs, steers not yet taken,
 * steers requeued as turns) one tenant may hold across all its invocations
 * (`--tenant-max-waiting-input-bytes`; 0 = no limit). Each invocation holds a
 * {@link TenantInputHold}: it is resized to what the invocation holds as
 * inputs are admitted and taken, and released in full when the invocation
 * ends. One budget is shared by every agent of a server.
 */
export class TenantInputBudget {
  private readonly held = new Map<string, number>();

  /** `maxBytes`: the bytes one tenant may hold; 0 = no limit. */
  constructor(readonly maxBytes: number) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
      throw new AgentError(
        "INVALID_ARGUMENT",
        `maxTenantWaitingInputBytes must be a whole number >= 0, got ${maxBytes}`,
      );
  }

  /** A hold of one invocation of `tenant`, empty until resized. */
  hold(tenant: string): TenantInputHold {
    return new TenantInputHold(this, tenant);
  }

  /** The bytes `tenant`'s invocations hold now. */
  heldBy(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  /** Tenants holding any bytes (tenants holding none are forgotten: memory stays bounded by the busy tenants). */
  get tenants(): number {
    return this.held.size;
  }

  /** @internal Adds `delta` (may be negative) to `tenant`'s bytes. */
  add(tenant: string, delta: number): void {
    const bytes = this.heldBy(tenant) + delta;
    if (bytes > 0) this.held.set(tenant, bytes);
    else this.held.delete(tenant);
  }
}

/** What one invocation holds of its tenant's {@link TenantInputBudget}. */
export class TenantInputHold {
  private bytes = 0;
  private released = false;

  constructor(
    private readonly budget: TenantInputBudget,
    private readonly tenant: string,
  ) {}

  /**
   * Checks that `bytes` more may wait, with this invocation holding `held`
   * bytes now (what it held before is resized to that first). Throws
   * RESOURCE_EXHAUSTED naming the flag when the tenant would pass its budget.
   */
  admit(held: number, bytes: number): void {
    this.resize(held);
    const max = this.budget.maxBytes;
    if (max === 0) return;
    const tenantHeld = this.budget.heldBy(this.tenant);
    if (tenantHeld + bytes <= max) return;
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      `this tenant's invocations already hold ${tenantHeld} bytes of waiting inputs and steers; one more of ${bytes} bytes would pass the limit of ${max} per tenant (--tenant-max-waiting-input-bytes): wait for a TurnEnd or end a call before sending more`,
      { details: { tenantWaitingInputBytes: tenantHeld, maxTenantWaitingInputBytes: max } },
    );
  }

  /** This invocation now holds `held` bytes (after inputs were kept or taken). No-op once released. */
  resize(held: number): void {
    if (this.released || held === this.bytes) return;
    this.budget.add(this.tenant, held - this.bytes);
    this.bytes = held;
  }

  /** The invocation ended: everything it held is freed, and later resizes do nothing. Idempotent. */
  release(): void {
    if (this.released) return;
    this.resize(0);
    this.released = true;
  }
}
