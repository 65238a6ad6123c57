import { create } from "@bufbuild/protobuf";
import { ListValueSchema, type ListValue } from "@bufbuild/protobuf/wkt";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { SnapshotEditSchema, type SnapshotEdit as WireSnapshotEdit } from "../../gen/ts/agentd/v1/state_pb.js";
import type { JsonPatchOperation } from "../types/agent-io.js";
import type { SnapshotEdit } from "../types/snapshot.js";
import { optionalString } from "../codec/json-wire.js";

/** A snapshot's edit note as `agentd.v1.SnapshotEdit` (the patches as JSON arrays; absent ones unset). */
export function snapshotEditToWire(edit: SnapshotEdit): WireSnapshotEdit {
  return create(SnapshotEditSchema, {
    editedBy: edit.by,
    tenant: edit.tenant,
    ...(edit.statePatch ? { statePatch: patchToList(edit.statePatch) } : {}),
    ...(edit.messagesPatch ? { messagesPatch: patchToList(edit.messagesPatch) } : {}),
  });
}

/** An `agentd.v1.SnapshotEdit` as a snapshot's edit note (unset patches left out). */
export function snapshotEditFromWire(edit: WireSnapshotEdit): SnapshotEdit {
  return {
    by: edit.editedBy,
    tenant: optionalString(edit.tenant) ?? "",
    ...(edit.statePatch ? { statePatch: patchFromList(edit.statePatch) } : {}),
    ...(edit.messagesPatch ? { messagesPatch: patchFromList(edit.messagesPatch) } : {}),
  };
}

function patchToList(patch: readonly JsonPatchOperation[]): ListValue {
  return fromJson(ListValueSchema, JSON.parse(JSON.stringify(patch)) as JsonValue);
}

function patchFromList(list: ListValue): JsonPatchOperation[] {
  return toJson(ListValueSchema, list) as unknown as JsonPatchOperation[];
}
