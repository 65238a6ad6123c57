import { AgentError } from "../../errors/agent-error.js";

/**
 * Bounds on what one caller's input may make the server hold or compute,
 * checked before the input is applied: `init.state_patch` /
 * `init.messages_patch`, and the steers and other inputs waiting on one
 * invocation. Each refusal names its limit (and flag).
 */
export interface InputLimits {
  /** Operations in one `init.state_patch` or `init.messages_patch` (`--max-patch-operations`). Default 1000. */
  maxPatchOperations: number;
  /**
   * Bytes one patch may write: every value it adds or replaces, every value
   * it copies or moves (16 bytes per value, array slot or object member, plus
   * the characters of strings and keys: about what the copy holds in memory),
   * and one per array element an insertion or removal shifts
   * (`--max-patch-bytes`). Counted as the patch is applied; the copy that
   * crosses it stops there, and nothing is applied. Default 4 MiB.
   */
  maxPatchBytes: number;
  /**
   * Deepest nesting a patch may give the custom state (`{"a": {}}` is 2),
   * the same as free-form JSON on the wire. Fixed: 32.
   */
  maxPatchDepth: number;
  /** Steers one turn accepts (taken or waiting), fixed: 16; one more is RESOURCE_EXHAUSTED. */
  maxSteersPerTurn: number;
  /**
   * Bytes (as JSON) of the inputs waiting on one invocation: queued turn
   * inputs, steers its turn has not taken and steers requeued as turns
   * (`--max-waiting-input-bytes`). Also the most bytes of steers one turn
   * accepts. Default 16 MiB.
   */
  maxWaitingInputBytes: number;
  /**
   * Bytes (as JSON) of the inputs waiting on all the invocations of one
   * tenant together, counted like `maxWaitingInputBytes`
   * (`--tenant-max-waiting-input-bytes`); 0 = no limit. Default 64 MiB.
   */
  maxTenantWaitingInputBytes: number;
  /**
   * Bytes (as JSON) of steers posted on a detached run's row for another
   * instance and not yet answered. Fixed: 4 MiB.
   */
  maxPostedControlBytes: number;
}

/** The defaults of {@link InputLimits}. */
export const DEFAULT_INPUT_LIMITS: Readonly<InputLimits> = Object.freeze({
  maxPatchOperations: 1000,
  maxPatchBytes: 4 * 1024 * 1024,
  maxPatchDepth: 32,
  maxSteersPerTurn: 16,
  maxWaitingInputBytes: 16 * 1024 * 1024,
  maxTenantWaitingInputBytes: 64 * 1024 * 1024,
  maxPostedControlBytes: 4 * 1024 * 1024,
});

/** Limits that may be 0 (no limit). */
const ZERO_IS_UNLIMITED = new Set<string>(["maxTenantWaitingInputBytes"]);

/**
 * `overrides` on top of {@link DEFAULT_INPUT_LIMITS}; INVALID_ARGUMENT for a
 * value that is not a whole number >= 1 (>= 0 for `maxTenantWaitingInputBytes`).
 */
export function inputLimits(overrides: Partial<InputLimits> = {}): InputLimits {
  const limits: InputLimits = { ...DEFAULT_INPUT_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    const min = ZERO_IS_UNLIMITED.has(name) ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < min)
      throw new AgentError("INVALID_ARGUMENT", `inputLimits.${name} must be a whole number >= ${min}, got ${value}`);
  }
  return limits;
}
