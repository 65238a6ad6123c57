import { AgentError } from "../../errors/agent-error.js";
import type { BusyPolicy } from "../../types/session-state.js";
import type { CheckpointPolicy } from "../../../stores/ledger/checkpoint-policy.js";
import { DEFAULT_CLAIM_SETTINGS, type ClaimSettings } from "./session-claim.js";
import { DEFAULT_RECORD_SETTINGS, type RecordSettings } from "./turn-record.js";
import { DEFAULT_INPUT_LIMITS, inputLimits, type InputLimits } from "./input-limits.js";
import { TenantInputBudget } from "./tenant-input-budget.js";
import { DEFAULT_REQUEST_WINDOW, validateRequestWindow, type RequestWindow } from "./request-ledger.js";

/** How server-managed sessions are run: busy policy, leases, records and limits. */
export interface SessionSettings {
  /** What a call does on a busy session when it sets no `busyPolicy` (`--busy-policy`). Default `reject`. */
  busyPolicy: BusyPolicy;
  /** Lease timing and the ENQUEUE line length. */
  claims: ClaimSettings;
  /** Checkpoint policy and the per-session size cap (`--max-session-bytes`). */
  records: RecordSettings;
  /** Inputs queued ahead of the running turn of one invocation (Chat); one more is RESOURCE_EXHAUSTED. Default 16. */
  maxQueuedInputs: number;
  /**
   * Chunks of one invocation that may wait for a slow reader (the client, or
   * a unary Run collecting them) before the agent's emit waits for the reader
   * to catch up (backpressure). Default 1024.
   */
  maxBufferedChunks: number;
  /** Bounds on patches, steers and waiting inputs (`--max-patch-operations`, `--max-patch-bytes`, `--max-waiting-input-bytes`). */
  inputs: InputLimits;
  /**
   * The waiting-input bytes each tenant holds across the invocations of
   * every agent sharing these settings (`inputs.maxTenantWaitingInputBytes`);
   * made by {@link sessionSettings}, unset in the defaults (no such bound).
   */
  tenantInputs?: TenantInputBudget;
  /** Idle time-to-live (ms) of new sessions that set none (`--session-ttl`); unset: sessions never expire. */
  sessionTtlMs?: number;
}

/** Longest session time-to-live: 10 years. */
export const MAX_SESSION_TTL_MS = 10 * 365 * 24 * 3600 * 1000;

/** `ttlMs` when it is a whole number of ms between 1 and {@link MAX_SESSION_TTL_MS}; INVALID_ARGUMENT otherwise. */
export function validateTtl(ttlMs: number): number {
  if (!Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_SESSION_TTL_MS) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `a session time-to-live must be between 1 ms and 10 years, got ${ttlMs} ms`,
    );
  }
  return ttlMs;
}

/** The defaults: REJECT, 15 s leases, checkpoints per the default policy, 64 MiB sessions, 16 queued inputs, 1024 buffered chunks. */
export const DEFAULT_SESSION_SETTINGS: Readonly<SessionSettings> = Object.freeze({
  busyPolicy: "reject",
  claims: DEFAULT_CLAIM_SETTINGS,
  records: DEFAULT_RECORD_SETTINGS,
  maxQueuedInputs: 16,
  maxBufferedChunks: 1024,
  inputs: DEFAULT_INPUT_LIMITS,
});

/** Overrides of {@link DEFAULT_SESSION_SETTINGS}; each field falls back to its default. */
export interface SessionSettingsOptions {
  busyPolicy?: BusyPolicy;
  claims?: Partial<ClaimSettings>;
  checkpoints?: Partial<CheckpointPolicy>;
  maxSessionBytes?: number;
  maxQueuedInputs?: number;
  maxBufferedChunks?: number;
  /** Overrides of the input limits; INVALID_ARGUMENT for a value below 1. */
  inputs?: Partial<InputLimits>;
  sessionTtlMs?: number;
  /** Which committed request IDs a session remembers (`--request-ids-kept`, `--request-id-ttl`); see `RequestWindow`. */
  requestWindow?: Partial<RequestWindow>;
}

/** The settings `options` asks for on top of the defaults; INVALID_ARGUMENT for a value out of range. */
export function sessionSettings(options: SessionSettingsOptions = {}): SessionSettings {
  const d = DEFAULT_SESSION_SETTINGS;
  const inputs = inputLimits(options.inputs);
  const settings: SessionSettings = {
    busyPolicy: options.busyPolicy ?? d.busyPolicy,
    claims: {
      ...d.claims,
      ...options.claims,
      requestWindow: validateRequestWindow({
        ...DEFAULT_REQUEST_WINDOW,
        ...options.claims?.requestWindow,
        ...options.requestWindow,
      }),
    },
    records: {
      checkpoints: { ...d.records.checkpoints, ...options.checkpoints },
      maxSessionBytes: options.maxSessionBytes ?? d.records.maxSessionBytes,
    },
    maxQueuedInputs: options.maxQueuedInputs ?? d.maxQueuedInputs,
    maxBufferedChunks: options.maxBufferedChunks ?? d.maxBufferedChunks,
    inputs,
    tenantInputs: new TenantInputBudget(inputs.maxTenantWaitingInputBytes),
    ...(options.sessionTtlMs !== undefined ? { sessionTtlMs: validateTtl(options.sessionTtlMs) } : {}),
  };
  if (!["reject", "enqueue", "interrupt"].includes(settings.busyPolicy)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `busyPolicy must be "reject", "enqueue" or "interrupt", got "${settings.busyPolicy}"`,
    );
  }
  const positive: [string, number][] = [
    ["maxSessionBytes", settings.records.maxSessionBytes],
    ["maxQueuedInputs", settings.maxQueuedInputs],
    ["maxBufferedChunks", settings.maxBufferedChunks],
    ["claims.leaseTtlMs", settings.claims.leaseTtlMs],
    ["claims.refreshMs", settings.claims.refreshMs],
    ["claims.pollMs", settings.claims.pollMs],
    ["claims.maxWaiters", settings.claims.maxWaiters],
    ["checkpoints.maxDepth", settings.records.checkpoints.maxDepth],
  ];
  for (const [name, value] of positive) {
    if (!Number.isFinite(value) || value < 1)
      throw new AgentError("INVALID_ARGUMENT", `${name} must be a number >= 1, got ${value}`);
  }
  if (settings.claims.refreshMs >= settings.claims.leaseTtlMs) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `claims.refreshMs (${settings.claims.refreshMs}) must be below claims.leaseTtlMs (${settings.claims.leaseTtlMs})`,
    );
  }
  return settings;
}
