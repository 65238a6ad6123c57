import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { SnapshotSchema, type Snapshot as WireSnapshot } from "../../gen/ts/agentd/v1/state_pb.js";
import type { SessionSnapshot } from "../types/snapshot.js";
import { snapshotEditFromWire, snapshotEditToWire } from "./snapshot-edit-wire.js";
import {
  finishReasonFromWire,
  finishReasonToWire,
  snapshotStatusFromWire,
  snapshotStatusToWire,
} from "../codec/enum-wire.js";
import { optionalString } from "../codec/json-wire.js";
import { pendingInputFromWire, pendingInputToWire } from "./pending-input-wire.js";
import { agentErrorFromWire, agentErrorToWire, sessionStateFromWire, sessionStateToWire } from "./state-wire.js";
import { usageFieldFromWire, usageFieldToWire } from "./usage-wire.js";

/**
 * A stored snapshot as `agentd.v1.Snapshot` (epoch-ms timestamps become
 * `google.protobuf.Timestamp`). `includeState: false` leaves `state` unset,
 * as ListSnapshots does without include_state.
 */
export function snapshotToWire(snapshot: SessionSnapshot, options: { includeState?: boolean } = {}): WireSnapshot {
  const includeState = options.includeState ?? true;
  return create(SnapshotSchema, {
    snapshotId: snapshot.snapshotId,
    sessionId: snapshot.sessionId,
    parentId: snapshot.parentId ?? "",
    turnIndex: snapshot.turnIndex,
    createdAt: timestampFromMs(snapshot.createdAt),
    updatedAt: timestampFromMs(snapshot.updatedAt),
    ...(snapshot.heartbeatAt !== undefined ? { heartbeatAt: timestampFromMs(snapshot.heartbeatAt) } : {}),
    status: snapshotStatusToWire(snapshot.status),
    finishReason: finishReasonToWire(snapshot.finishReason),
    ...(snapshot.error ? { error: agentErrorToWire(snapshot.error) } : {}),
    ...(includeState && snapshot.state ? { state: sessionStateToWire(snapshot.state) } : {}),
    ...usageFieldToWire(snapshot.usage),
    ...(snapshot.edit ? { edit: snapshotEditToWire(snapshot.edit) } : {}),
    pendingInputs: (snapshot.pendingInputs ?? []).map(pendingInputToWire),
  });
}

/**
 * An `agentd.v1.Snapshot` as a snapshot: timestamps back to epoch ms (an
 * unset created/updated timestamp reads as 0), SNAPSHOT_STATUS_UNSPECIFIED
 * reads as "pending", FINISH_REASON_UNSPECIFIED leaves finishReason unset.
 */
export function snapshotFromWire(snapshot: WireSnapshot): SessionSnapshot {
  const parentId = optionalString(snapshot.parentId);
  const finishReason = finishReasonFromWire(snapshot.finishReason);
  return {
    snapshotId: snapshot.snapshotId,
    sessionId: snapshot.sessionId,
    ...(parentId ? { parentId } : {}),
    turnIndex: snapshot.turnIndex,
    createdAt: snapshot.createdAt ? timestampMs(snapshot.createdAt) : 0,
    updatedAt: snapshot.updatedAt ? timestampMs(snapshot.updatedAt) : 0,
    ...(snapshot.heartbeatAt ? { heartbeatAt: timestampMs(snapshot.heartbeatAt) } : {}),
    status: snapshotStatusFromWire(snapshot.status) ?? "pending",
    ...(finishReason ? { finishReason } : {}),
    ...(snapshot.error ? { error: agentErrorFromWire(snapshot.error) } : {}),
    ...(snapshot.state ? { state: sessionStateFromWire(snapshot.state) } : {}),
    ...usageFieldFromWire(snapshot.usage),
    ...(snapshot.edit ? { edit: snapshotEditFromWire(snapshot.edit) } : {}),
    ...(snapshot.pendingInputs.length ? { pendingInputs: snapshot.pendingInputs.map(pendingInputFromWire) } : {}),
  };
}
