import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectThrowsAgentError } from "./runtime-fixtures.js";
import { stateJsonSchema, validateCustomState } from "../../src/runtime/agents/custom-state-schema.js";

const schema = z.object({ n: z.number(), meta: z.object({ tag: z.string() }), label: z.string().default("none") });

describe("validateCustomState", () => {
  it("returns the schema's parsed value (defaults filled in)", () => {
    expect(validateCustomState(schema, { n: 1, meta: { tag: "t" } }, "custom state")).toEqual({
      n: 1,
      meta: { tag: "t" },
      label: "none",
    });
  });

  it("refuses a failing value with INVALID_ARGUMENT: the first field, and every issue by dotted path", () => {
    const error = expectThrowsAgentError(
      () => validateCustomState(schema, { n: "x", meta: { tag: 1 } }, "custom state"),
      "INVALID_ARGUMENT",
      /^custom state: /,
    );
    expect(error.details).toEqual({
      field: "n",
      issues: [
        { path: "n", message: expect.stringMatching(/expected number/) },
        { path: "meta.tag", message: expect.stringMatching(/expected string/) },
      ],
    });
  });
});

describe("stateJsonSchema", () => {
  it("is the schema's JSON Schema, and {} for an agent without one", () => {
    expect(stateJsonSchema(undefined)).toEqual({});
    expect(stateJsonSchema(z.object({ n: z.number() }))).toMatchObject({
      type: "object",
      properties: { n: { type: "number" } },
      required: ["n"],
    });
  });
});
