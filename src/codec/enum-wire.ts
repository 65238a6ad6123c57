import { AgentError } from "../errors/agent-error.js";
import {
  BusyPolicy as WireBusyPolicy,
  StateManagement as WireStateManagement,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import { Role as WireRole } from "../../gen/ts/agentd/v1/content_pb.js";
import {
  FinishReason as WireFinishReason,
  SnapshotStatus as WireSnapshotStatus,
} from "../../gen/ts/agentd/v1/state_pb.js";
import type { StateManagement } from "../types/agent-io.js";
import type { Role } from "../types/content.js";
import type { BusyPolicy } from "../types/session-state.js";
import type { FinishReason, SnapshotStatus } from "../types/snapshot.js";

const ROLES: Record<Role, WireRole> = {
  user: WireRole.USER,
  model: WireRole.MODEL,
  system: WireRole.SYSTEM,
  tool: WireRole.TOOL,
};

const FINISH_REASONS: Record<FinishReason, WireFinishReason> = {
  stop: WireFinishReason.STOP,
  length: WireFinishReason.LENGTH,
  blocked: WireFinishReason.BLOCKED,
  interrupted: WireFinishReason.INTERRUPTED,
  other: WireFinishReason.OTHER,
  unknown: WireFinishReason.UNKNOWN,
  aborted: WireFinishReason.ABORTED,
  detached: WireFinishReason.DETACHED,
  failed: WireFinishReason.FAILED,
};

const SNAPSHOT_STATUSES: Record<SnapshotStatus, WireSnapshotStatus> = {
  pending: WireSnapshotStatus.PENDING,
  completed: WireSnapshotStatus.COMPLETED,
  failed: WireSnapshotStatus.FAILED,
  aborted: WireSnapshotStatus.ABORTED,
  expired: WireSnapshotStatus.EXPIRED,
};

const STATE_MANAGEMENT: Record<StateManagement, WireStateManagement> = {
  server: WireStateManagement.SERVER,
  client: WireStateManagement.CLIENT,
};

const BUSY_POLICIES: Record<BusyPolicy, WireBusyPolicy> = {
  reject: WireBusyPolicy.REJECT,
  enqueue: WireBusyPolicy.ENQUEUE,
  interrupt: WireBusyPolicy.INTERRUPT,
};

function invert<K extends string, V extends number>(table: Record<K, V>): Map<V, K> {
  return new Map(Object.entries(table).map(([k, v]) => [v as V, k as K]));
}

const ROLE_NAMES = invert(ROLES);
const FINISH_REASON_NAMES = invert(FINISH_REASONS);
const SNAPSHOT_STATUS_NAMES = invert(SNAPSHOT_STATUSES);
const STATE_MANAGEMENT_NAMES = invert(STATE_MANAGEMENT);
const BUSY_POLICY_NAMES = invert(BUSY_POLICIES);

/** A busy policy as its wire enum; undefined is BUSY_POLICY_UNSPECIFIED (the server's default). */
export function busyPolicyToWire(policy: BusyPolicy | undefined): WireBusyPolicy {
  return policy ? BUSY_POLICIES[policy] : WireBusyPolicy.UNSPECIFIED;
}

/** A wire busy policy; UNSPECIFIED is undefined (the server's default); an unknown number is INVALID_ARGUMENT. */
export function busyPolicyFromWire(policy: WireBusyPolicy): BusyPolicy | undefined {
  if (policy === WireBusyPolicy.UNSPECIFIED) return undefined;
  const name = BUSY_POLICY_NAMES.get(policy);
  if (!name)
    throw new AgentError(
      "INVALID_ARGUMENT",
      `init.busy_policy: unknown value ${policy}; use BUSY_POLICY_REJECT, BUSY_POLICY_ENQUEUE or BUSY_POLICY_INTERRUPT`,
    );
  return name;
}

/** A role as its wire enum. */
export function roleToWire(role: Role): WireRole {
  return ROLES[role] ?? WireRole.UNSPECIFIED;
}

/** A wire role; ROLE_UNSPECIFIED (and unknown numbers) read as `fallback` (default "user"). */
export function roleFromWire(role: WireRole, fallback: Role = "user"): Role {
  return ROLE_NAMES.get(role) ?? fallback;
}

/** A finish reason as its wire enum; undefined is FINISH_REASON_UNSPECIFIED. */
export function finishReasonToWire(reason: FinishReason | undefined): WireFinishReason {
  return reason === undefined ? WireFinishReason.UNSPECIFIED : (FINISH_REASONS[reason] ?? WireFinishReason.UNKNOWN);
}

/** A wire finish reason; UNSPECIFIED is undefined, unknown numbers are "unknown". */
export function finishReasonFromWire(reason: WireFinishReason): FinishReason | undefined {
  if (reason === WireFinishReason.UNSPECIFIED) return undefined;
  return FINISH_REASON_NAMES.get(reason) ?? "unknown";
}

/** A snapshot status as its wire enum. */
export function snapshotStatusToWire(status: SnapshotStatus): WireSnapshotStatus {
  return SNAPSHOT_STATUSES[status] ?? WireSnapshotStatus.UNSPECIFIED;
}

/** A wire snapshot status; UNSPECIFIED (and unknown numbers) are undefined. */
export function snapshotStatusFromWire(status: WireSnapshotStatus): SnapshotStatus | undefined {
  return SNAPSHOT_STATUS_NAMES.get(status);
}

/** State management as its wire enum. */
export function stateManagementToWire(mode: StateManagement): WireStateManagement {
  return STATE_MANAGEMENT[mode] ?? WireStateManagement.UNSPECIFIED;
}

/** A wire state management; UNSPECIFIED (and unknown numbers) are undefined. */
export function stateManagementFromWire(mode: WireStateManagement): StateManagement | undefined {
  return STATE_MANAGEMENT_NAMES.get(mode);
}
