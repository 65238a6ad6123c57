import type { DescField, DescMessage } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { AgentError } from "../errors/agent-error.js";
import { decodeError, isDecodeError, MAX_ECHO_CHARS } from "./call-errors.js";
import { tapStream } from "../streams/stream-tap.js";

/**
 * Deepest nesting of free-form JSON (`google.protobuf.Struct` / `Value`
 * fields: message, part and artifact metadata, tool input / output, data
 * parts, custom state) a request may carry; `{"a": {}}` is 2 levels.
 */
export const MAX_JSON_DEPTH = 32;

/** Longest ID (`session_id`, `snapshot_id`, any `*_id`) or agent name a request may carry. */
export const MAX_ID_CHARS = MAX_ECHO_CHARS;

/**
 * An interceptor that checks every request message before the handler sees
 * it: JSON nesting at most {@link MAX_JSON_DEPTH} levels and IDs at most
 * {@link MAX_ID_CHARS} characters without NUL, else INVALID_ARGUMENT naming the field.
 * For streamed requests it also turns an undecodable message into
 * INVALID_ARGUMENT (connect-es raises those as INTERNAL).
 */
export function requestValidationInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      validateRequest(req.method.input, req.message);
      return next(req);
    }
    const schema = req.method.input;
    const message = tapStream(req.message, {
      item: (m) => validateRequest(schema, m),
      error: (err) => (isDecodeError(err) ? decodeError(err) : err),
    });
    return next({ ...req, message } as typeof req);
  };
}

/** Throws INVALID_ARGUMENT when `message` (of type `schema`) breaks a request limit. */
export function validateRequest(schema: DescMessage, message: unknown): void {
  walkMessage(schema, message as Record<string, unknown>, "", 0);
}

function walkMessage(desc: DescMessage, message: Record<string, unknown>, path: string, level: number): void {
  if (level > 64) throw new AgentError("INVALID_ARGUMENT", `${path || "request"} is nested too deeply`);
  for (const field of desc.fields) {
    let value: unknown;
    if (field.oneof) {
      const oneof = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (oneof?.case !== field.localName) continue;
      value = oneof.value;
    } else {
      value = message[field.localName];
    }
    if (value === undefined || value === null) continue;
    const name = path ? `${path}.${field.name}` : field.name;
    checkField(field, value, name, level);
  }
}

function checkField(field: DescField, value: unknown, name: string, level: number): void {
  switch (field.fieldKind) {
    case "scalar":
      if (typeof value === "string" && isIdField(field)) checkId(value, name);
      return;
    case "message":
      checkMessage(field.message, value, name, level);
      return;
    case "list":
      if (field.listKind === "message")
        (value as unknown[]).forEach((v, i) => checkMessage(field.message, v, `${name}[${i}]`, level));
      return;
    case "map":
      if (field.mapKind === "message") {
        for (const [k, v] of Object.entries(value as Record<string, unknown>))
          checkMessage(field.message, v, `${name}["${k.slice(0, 40)}"]`, level);
      }
      return;
    default:
      return;
  }
}

/**
 * An ID or agent name: at most {@link MAX_ID_CHARS} characters, and no NUL
 * (U+0000), which no ID agentd makes holds and PostgreSQL cannot store in
 * text; the same answer on every store, instead of NOT_FOUND on some and a
 * store error on PostgreSQL.
 */
function checkId(value: string, name: string): void {
  if (value.length > MAX_ID_CHARS) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${name} is ${value.length} characters long; the limit is ${MAX_ID_CHARS}`,
    );
  }
  if (value.includes("\u0000")) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `${name} contains the character U+0000 (NUL), which no ID or agent name holds`,
    );
  }
}

function isIdField(field: DescField): boolean {
  return field.name === "agent" || field.name.endsWith("_id");
}

function checkMessage(desc: DescMessage, value: unknown, name: string, level: number): void {
  switch (desc.typeName) {
    case "google.protobuf.Struct":
    case "google.protobuf.Value":
    case "google.protobuf.ListValue": {
      // protobuf-es holds Struct fields as plain JSON objects, Value / ListValue fields as messages.
      const plain = desc.typeName === "google.protobuf.Struct";
      const depth = jsonDepth(value, MAX_JSON_DEPTH + 1, plain);
      if (depth > MAX_JSON_DEPTH) {
        throw new AgentError(
          "INVALID_ARGUMENT",
          `${name} is nested more than ${MAX_JSON_DEPTH} levels deep (the limit for free-form JSON)`,
          {
            details: { field: name, maxDepth: MAX_JSON_DEPTH },
          },
        );
      }
      return;
    }
    default:
      walkMessage(desc, value as Record<string, unknown>, name, level + 1);
  }
}

/**
 * Nesting depth of free-form JSON as protobuf-es holds it: a plain JSON
 * object for a Struct field (`plain`), `google.protobuf.Value` / `Struct` /
 * `ListValue` messages otherwise. Scalars are 0, `{}` and `[]` are 1.
 * Stops counting at `stopAt`.
 */
export function jsonDepth(value: unknown, stopAt: number, plain = false): number {
  return plain ? plainDepth(value, 0, stopAt) : messageDepth(value, 0, stopAt);
}

function plainDepth(value: unknown, above: number, stopAt: number): number {
  if (above >= stopAt || value === null || typeof value !== "object") return above;
  let deepest = above + 1;
  for (const child of Array.isArray(value) ? value : Object.values(value)) {
    deepest = Math.max(deepest, plainDepth(child, above + 1, stopAt));
    if (deepest >= stopAt) break;
  }
  return deepest;
}

function messageDepth(value: unknown, above: number, stopAt: number): number {
  if (above >= stopAt || value === null || typeof value !== "object") return above;
  const typed = value as {
    $typeName?: string;
    kind?: { value?: unknown };
    fields?: Record<string, unknown>;
    values?: unknown[];
  };
  let children: unknown[];
  switch (typed.$typeName) {
    case "google.protobuf.Value":
      return messageDepth(typed.kind?.value, above, stopAt);
    case "google.protobuf.Struct":
      children = Object.values(typed.fields ?? {});
      break;
    case "google.protobuf.ListValue":
      children = typed.values ?? [];
      break;
    default:
      return plainDepth(value, above, stopAt);
  }
  let deepest = above + 1;
  for (const child of children) {
    deepest = Math.max(deepest, messageDepth(child, above + 1, stopAt));
    if (deepest >= stopAt) break;
  }
  return deepest;
}
