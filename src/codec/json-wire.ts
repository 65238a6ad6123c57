import { fromJson, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { AgentError } from "../errors/agent-error.js";

/**
 * Free-form JSON on the wire: `google.protobuf.Value` is a message in
 * protobuf-es, `google.protobuf.Struct` fields are plain `JsonObject`s.
 * These helpers convert runtime values (`unknown`, records) to and from them.
 */

/** A JSON-safe deep copy (drops undefined members, turns Dates into strings, like JSON.stringify). */
function jsonCopy(value: unknown, what: string): JsonValue {
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch (err) {
    throw new AgentError("INVALID_ARGUMENT", `${what} is not JSON-serialisable: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** A runtime value as `google.protobuf.Value`; undefined stays undefined (field unset). */
export function valueToWire(value: unknown, what = "value"): Value | undefined {
  if (value === undefined) return undefined;
  return fromJson(ValueSchema, jsonCopy(value, what));
}

/** A `google.protobuf.Value` as plain JSON; an unset field or an empty Value is undefined. */
export function valueFromWire(value: Value | undefined): unknown {
  if (value === undefined || value.kind.case === undefined) return undefined;
  return toJson(ValueSchema, value);
}

/** A record as a `google.protobuf.Struct` field value; undefined stays undefined. */
export function structToWire(record: Record<string, unknown> | undefined, what = "object"): JsonObject | undefined {
  if (record === undefined) return undefined;
  const json = jsonCopy(record, what);
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new AgentError("INVALID_ARGUMENT", `${what} must be a JSON object`);
  }
  return json;
}

/** A `google.protobuf.Struct` field value as a record (a copy); unset stays undefined. */
export function structFromWire(struct: JsonObject | undefined): Record<string, unknown> | undefined {
  if (struct === undefined) return undefined;
  return structuredClone(struct) as Record<string, unknown>;
}

/** An empty proto3 string as undefined. */
export function optionalString(value: string): string | undefined {
  return value === "" ? undefined : value;
}
