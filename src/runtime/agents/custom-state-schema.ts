import { z, type ZodType } from "zod";
import { AgentError } from "../../errors/agent-error.js";
import { describeZodError, zodIssuePath } from "../../errors/zod-error.js";

/**
 * Parses `value` with the agent's zod state schema. Resolves to the parsed
 * value; throws AgentError INVALID_ARGUMENT naming every failing field
 * (e.g. `custom state: tasks.0.title: expected string, received number`).
 */
export function validateCustomState<S>(schema: ZodType<S>, value: unknown, what: string): S {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const field = first ? zodIssuePath(first) : "(root)";
  throw new AgentError("INVALID_ARGUMENT", `${what}: ${describeZodError(result.error)}`, {
    details: { field, issues: result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })) },
  });
}

/** The JSON Schema of a zod state schema ({} when the agent has none). */
export function stateJsonSchema(schema: ZodType | undefined): Record<string, unknown> {
  if (!schema) return {};
  return z.toJSONSchema(schema, { unrepresentable: "any" }) as Record<string, unknown>;
}
