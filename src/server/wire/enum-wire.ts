import { StateManagement as WireStateManagement } from "../../../gen/ts/agentd/v1/agent_pb.js";
import { Role as WireRole } from "../../../gen/ts/agentd/v1/content_pb.js";
import { FinishReason as WireFinishReason, SnapshotStatus as WireSnapshotStatus } from "../../../gen/ts/agentd/v1/state_pb.js";
import type { StateManagement } from "../../types/agent-io.js";
import type { Role } from "../../types/content.js";
import type { FinishReason, SnapshotStatus } from "../../types/snapshot.js";

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

function invert<K extends string, V extends number>(table: Record<K, V>): Map<V, K> {
  return new Map(Object.entries(table).map(([k, v]) => [v as V, k as K]));
}

const ROLE_NAMES = invert(ROLES);
const FINISH_REASON_NAMES = invert(FINISH_REASONS);
const SNAPSHOT_STATUS_NAMES = invert(SNAPSHOT_STATUSES);
const STATE_MANAGEMENT_NAMES = invert(STATE_MANAGEMENT);

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
