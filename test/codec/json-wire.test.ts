import { create } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { optionalString, structFromWire, structToWire, valueFromWire, valueToWire } from "../../src/codec/json-wire.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

describe("valueToWire", () => {
  it("round-trips JSON through google.protobuf.Value", () => {
    const value = { a: [1, "two", null, { b: false }] };
    expect(valueFromWire(valueToWire(value))).toStrictEqual(value);
  });

  it("leaves undefined unset", () => {
    expect(valueToWire(undefined)).toBeUndefined();
  });

  it("refuses a non-JSON value with INVALID_ARGUMENT naming it, the serializer's reason and the cause", () => {
    const err = expectThrowsAgentError(() => valueToWire({ n: 1n }, "tool input"), "INVALID_ARGUMENT");
    expect(err.message).toBe("tool input is not JSON-serialisable: Do not know how to serialize a BigInt");
    expect(err.cause).toBeInstanceOf(TypeError);
  });

  it('calls an unnamed value "value" in its error', () => {
    expectThrowsAgentError(() => valueToWire(1n), "INVALID_ARGUMENT", /^value is not JSON-serialisable: /);
  });
});

describe("valueFromWire", () => {
  it("reads an unset field as undefined", () => {
    expect(valueFromWire(undefined)).toBeUndefined();
  });

  it("reads an empty Value (no kind set) as undefined", () => {
    expect(valueFromWire(create(ValueSchema))).toBeUndefined();
  });
});

describe("structToWire", () => {
  it("leaves undefined unset", () => {
    expect(structToWire(undefined)).toBeUndefined();
  });

  it("refuses a record whose JSON form is not an object, naming it", () => {
    const err = expectThrowsAgentError(
      () => structToWire({ toJSON: () => [1, 2] }, "state schema"),
      "INVALID_ARGUMENT",
    );
    expect(err.message).toBe("state schema must be a JSON object");
  });

  it('calls an unnamed record "object" in its errors', () => {
    expect(expectThrowsAgentError(() => structToWire({ toJSON: () => "text" }), "INVALID_ARGUMENT").message).toBe(
      "object must be a JSON object",
    );
    expectThrowsAgentError(() => structToWire({ n: 1n }), "INVALID_ARGUMENT", /^object is not JSON-serialisable: /);
  });
});

describe("structFromWire", () => {
  it("returns a copy, not the wire object", () => {
    const wire = { a: { b: 1 } };
    const record = structFromWire(wire);
    expect(record).toStrictEqual(wire);
    expect(record).not.toBe(wire);
  });

  it("leaves unset undefined", () => {
    expect(structFromWire(undefined)).toBeUndefined();
  });
});

describe("optionalString", () => {
  it("reads the empty proto3 string as undefined", () => {
    expect(optionalString("")).toBeUndefined();
  });

  it("keeps any other string", () => {
    expect(optionalString("x")).toBe("x");
  });
});
