import { create } from "@bufbuild/protobuf";
import {
  JsonPatchOperationSchema,
  type JsonPatchOperation as WireJsonPatchOperation,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import { AgentError } from "../errors/agent-error.js";
import type { JsonPatchOperation } from "../types/agent-io.js";
import { valueFromWire, valueToWire } from "../codec/json-wire.js";

const PATCH_OPS: ReadonlySet<string> = new Set(["add", "remove", "replace", "move", "copy", "test"]);

/**
 * An RFC 6902 operation as `agentd.v1.JsonPatchOperation` (value unset when
 * undefined). `path` is always set — also the root "" — so proto JSON carries it.
 */
export function patchOperationToWire(op: JsonPatchOperation): WireJsonPatchOperation {
  const value = "value" in op ? valueToWire(op.value, `patch value at "${op.path}"`) : undefined;
  return create(JsonPatchOperationSchema, {
    op: op.op,
    path: op.path,
    from: op.from ?? "",
    ...(value ? { value } : {}),
  });
}

/**
 * An `agentd.v1.JsonPatchOperation` as an RFC 6902 operation.
 * Throws INVALID_ARGUMENT for an unknown `op`.
 */
export function patchOperationFromWire(op: WireJsonPatchOperation): JsonPatchOperation {
  if (!PATCH_OPS.has(op.op)) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `unknown JSON Patch op "${op.op}" (expected add, remove, replace, move, copy or test)`,
    );
  }
  const value = op.value !== undefined ? (valueFromWire(op.value) ?? null) : undefined;
  return {
    op: op.op as JsonPatchOperation["op"],
    path: op.path ?? "",
    ...(value !== undefined ? { value } : {}),
    ...(op.from ? { from: op.from } : {}),
  };
}

/** Wire patch operations as RFC 6902 operations; `field` names the list in an INVALID_ARGUMENT for an unknown op. */
export function patchFromWire(ops: readonly WireJsonPatchOperation[], field: string): JsonPatchOperation[] {
  return ops.map((op, i) => {
    try {
      return patchOperationFromWire(op);
    } catch (err) {
      throw new AgentError("INVALID_ARGUMENT", `${field}[${i}]: ${AgentError.from(err).message}`, {
        details: { field: `${field}[${i}]` },
      });
    }
  });
}
