import { create } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import {
  optionalString,
  structFromWire,
  structToWire,
  valueFromWire,
  valueToWire,
} from "../../src/protocol/json-wire.js";
import { thrown } from "./thrown-agent-error.js";

describe("valueToWire", () => {
  it("round-trips JSON through google.protobuf.Value", () => {
    const value = { a: [1, "two", null, { b: false }] };
    expect(valueFromWire(valueToWire(value))).toStrictEqual(value);
  });

  it("leaves undefined unset", () => {
    expect(valueToWire(undefined)).toBeUndefined();
  });

  it("refuses a non-JSON value with INVALID_ARGUMENT naming it, the serializer's reason and the cause", () => {
    const err = thrown(() => valueToWire({ n: 1n }, "tool input"));
    expect(err.status).toBe("INVALID_ARGUMENT");
    expect(err.message).toBe("tool input is not JSON-serialisable: Do not know how to serialize a BigInt");
    expect(err.cause).toBeInstanceOf(TypeError);
  });

  it('calls an unnamed value "value" in its error', () => {
    expect(thrown(() => valueToWire(1n)).message).toMatch(/^value is not JSON-serialisable: /);
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
    const err = thrown(() => structToWire({ toJSON: () => [1, 2] }, "state schema"));
    expect(err.status).toBe("INVALID_ARGUMENT");
    expect(err.message).toBe("state schema must be a JSON object");
  });

  it('calls an unnamed record "object" in its errors', () => {
    expect(thrown(() => structToWire({ toJSON: () => "text" })).message).toBe("object must be a JSON object");
    expect(thrown(() => structToWire({ n: 1n })).message).toMatch(/^object is not JSON-serialisable: /);
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
