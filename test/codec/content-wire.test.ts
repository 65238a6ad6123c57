import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PartSchema } from "../../gen/ts/agentd/v1/content_pb.js";
import {
  artifactFromWire,
  artifactToWire,
  messageFromWire,
  messageToWire,
  partFromWire,
  partToWire,
} from "../../src/codec/content-wire.js";
import { expectThrowsAgentError } from "../harness/agent-error-expectations.js";

/** A value JSON.stringify refuses. */
const notJson = { big: 1n };

describe("partToWire", () => {
  it("sends a media part without a content type as an empty content type", () => {
    const wire = partToWire({ media: { url: "https://example.com/a" } });
    expect(wire.kind).toEqual({ case: "media", value: expect.objectContaining({ contentType: "" }) });
    expect(partFromWire(wire)).toStrictEqual({ media: { url: "https://example.com/a" } });
  });

  it("does not treat a data member holding undefined as a data part", () => {
    const wire = partToWire({ data: undefined, reasoning: "hmm" });
    expect(wire.kind).toEqual({ case: "reasoning", value: "hmm" });
  });

  it("sends a part without content as metadata only", () => {
    const wire = partToWire({ metadata: { source: "x" } });
    expect(wire.kind.case).toBeUndefined();
    expect(wire.metadata).toEqual({ source: "x" });
    expect(partFromWire(wire)).toStrictEqual({ metadata: { source: "x" } });
  });

  it.each([
    ["part metadata", { text: "x", metadata: notJson }],
    ["tool request input", { toolRequest: { name: "t", input: notJson } }],
    ["tool response output", { toolResponse: { name: "t", output: notJson } }],
    ["data part", { data: notJson }],
    ["custom part", { custom: notJson }],
  ])("refuses a non-JSON %s with INVALID_ARGUMENT naming it", (what, part) => {
    const err = expectThrowsAgentError(() => partToWire(part), "INVALID_ARGUMENT");
    expect(err.message).toMatch(new RegExp(`^${what} is not JSON-serialisable: `));
  });
});

describe("partFromWire", () => {
  it("omits the input of a tool request that carries none", () => {
    const wire = partToWire({ toolRequest: { name: "look" } });
    expect(partFromWire(wire)).toStrictEqual({ toolRequest: { name: "look" } });
  });

  it("omits the output of a tool response that carries none", () => {
    const wire = partToWire({ toolResponse: { ref: "1", name: "look" } });
    expect(partFromWire(wire)).toStrictEqual({ toolResponse: { ref: "1", name: "look" } });
  });

  it("omits metadata when the part carries none", () => {
    expect(partFromWire(create(PartSchema, { kind: { case: "text", value: "hi" } }))).toStrictEqual({ text: "hi" });
  });
});

describe("messages and artifacts", () => {
  it("refuses non-JSON message metadata with INVALID_ARGUMENT naming it", () => {
    const err = expectThrowsAgentError(
      () => messageToWire({ role: "user", content: [], metadata: notJson }),
      "INVALID_ARGUMENT",
    );
    expect(err.message).toMatch(/^message metadata is not JSON-serialisable: /);
  });

  it("refuses non-JSON artifact metadata with INVALID_ARGUMENT naming it", () => {
    const err = expectThrowsAgentError(() => artifactToWire({ parts: [], metadata: notJson }), "INVALID_ARGUMENT");
    expect(err.message).toMatch(/^artifact metadata is not JSON-serialisable: /);
  });

  it("round-trips a message and an artifact without metadata or name as absent fields", () => {
    const message = { role: "tool" as const, content: [{ text: "t" }] };
    expect(messageFromWire(messageToWire(message))).toStrictEqual(message);
    const artifact = { parts: [{ text: "a" }] };
    expect(artifactToWire(artifact).name).toBe("");
    expect(artifactFromWire(artifactToWire(artifact))).toStrictEqual(artifact);
  });
});
