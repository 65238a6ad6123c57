import type { TenantLimitOptions } from "../server/tenant-limits.js";
import { DEFAULT_TENANT_LIMITS } from "../server/tenant-limits.js";
import type { UnauthenticatedShareOptions } from "../server/unauthenticated-share.js";

/** The fair-share flags of `agentd serve`, as `startServer({ fairShare })` takes them. */
export interface FairShareConfig {
  unauthenticated?: Partial<UnauthenticatedShareOptions>;
  tenants?: Partial<TenantLimitOptions>;
}

/** The `parseArgs` options of the fair-share flags. */
export const FAIR_SHARE_OPTIONS = {
  "max-unauthenticated-connections": { type: "string" },
  "max-unauthenticated-calls": { type: "string" },
  "unauthenticated-stream-timeout-ms": { type: "string" },
  "tenant-max-invocations": { type: "string" },
  "tenant-max-connections": { type: "string" },
  "tenant-rate": { type: "string" },
  "tenant-burst": { type: "string" },
  "max-tenants": { type: "string" },
} as const;

/** Their lines of `agentd --help`. */
export const FAIR_SHARE_USAGE = `Fair sharing (with authentication; see docs/security.md):
  --max-unauthenticated-connections <n>
                              connections that have not carried an authenticated call, at most; a new
                              one closes the oldest (default: half of --max-connections)
  --max-unauthenticated-calls <n>
                              calls without credentials (health, open reflection) in flight at once
                              (default: half of --max-connections)
  --unauthenticated-stream-timeout-ms <n>
                              end a streaming call without credentials (Health/Watch) after this long
                              (default 60000)
  --tenant-max-connections <n>
                              connections one tenant may hold; its call on one more is refused
                              RESOURCE_EXHAUSTED (default: a quarter of --max-connections; 0 = no limit)
  --tenant-max-invocations <n>
                              Run/RunStream/Chat calls one tenant may have running (default ${DEFAULT_TENANT_LIMITS.maxInvocations}; 0 = no limit)
  --tenant-rate <n>           calls per second one tenant may start (default ${DEFAULT_TENANT_LIMITS.requestsPerSecond}; 0 = no limit)
  --tenant-burst <n>          calls one tenant may start at once above the rate (default: 2 x --tenant-rate)
  --max-tenants <n>           tenants tracked at once; idle ones are forgotten, and while this many are
                              busy a new tenant gets RESOURCE_EXHAUSTED (default ${DEFAULT_TENANT_LIMITS.maxTenants}; 0 = no limit)
`;

/** Thrown for a bad value; the CLI turns it into its usage error. */
type UsageErrorFactory = (message: string) => Error;

function whole(flag: string, raw: string, min: number, usage: UsageErrorFactory): number {
  if (!/^\d+$/.test(raw.trim())) throw usage(`--${flag} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > 1_000_000_000)
    throw usage(`--${flag} must be between ${min} and 1000000000, got ${value}`);
  return value;
}

/**
 * The fair-share flags among `values`, checked: the unauthenticated
 * connections must stay below `maxConnections` (so callers with credentials
 * always have room). Returns undefined when none is given.
 */
export function fairShareConfig(
  values: Record<string, unknown>,
  maxConnections: number,
  usage: UsageErrorFactory,
): FairShareConfig | undefined {
  const get = (flag: keyof typeof FAIR_SHARE_OPTIONS, min: number): number | undefined => {
    const raw = values[flag];
    return typeof raw === "string" ? whole(flag, raw, min, usage) : undefined;
  };
  const unauthenticated: Partial<UnauthenticatedShareOptions> = {};
  const connections = get("max-unauthenticated-connections", 1);
  if (connections !== undefined) {
    if (connections >= maxConnections) {
      throw usage(
        `--max-unauthenticated-connections (${connections}) must be below --max-connections (${maxConnections}), so callers with credentials keep room`,
      );
    }
    unauthenticated.maxConnections = connections;
  }
  const calls = get("max-unauthenticated-calls", 1);
  if (calls !== undefined) unauthenticated.maxStreams = calls;
  const timeout = get("unauthenticated-stream-timeout-ms", 100);
  if (timeout !== undefined) unauthenticated.streamTimeoutMs = timeout;
  const tenantConnections = get("tenant-max-connections", 0);
  if (tenantConnections !== undefined) {
    if (tenantConnections >= maxConnections) {
      throw usage(
        `--tenant-max-connections (${tenantConnections}) must be below --max-connections (${maxConnections}), so one tenant cannot hold every connection`,
      );
    }
    unauthenticated.maxTenantConnections = tenantConnections;
  }
  const tenants: Partial<TenantLimitOptions> = {};
  const invocations = get("tenant-max-invocations", 0);
  if (invocations !== undefined) tenants.maxInvocations = invocations;
  const rate = get("tenant-rate", 0);
  if (rate !== undefined) {
    tenants.requestsPerSecond = rate;
    tenants.burst = Math.max(1, 2 * rate);
  }
  const burst = get("tenant-burst", 1);
  if (burst !== undefined) tenants.burst = burst;
  const maxTenants = get("max-tenants", 0);
  if (maxTenants !== undefined) tenants.maxTenants = maxTenants;
  const config: FairShareConfig = {
    ...(Object.keys(unauthenticated).length > 0 ? { unauthenticated } : {}),
    ...(Object.keys(tenants).length > 0 ? { tenants } : {}),
  };
  return Object.keys(config).length > 0 ? config : undefined;
}
