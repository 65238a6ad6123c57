import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { codeForStatus, isStatusName, statusForCode } from "../../src/protocol/status-codes.js";

describe("status codes", () => {
  it.each([
    ["CANCELLED", Code.Canceled],
    ["INVALID_ARGUMENT", Code.InvalidArgument],
    ["NOT_FOUND", Code.NotFound],
    ["UNAUTHENTICATED", Code.Unauthenticated],
  ] as const)("maps %s to its Connect code and back", (status, code) => {
    expect(codeForStatus(status)).toBe(code);
    expect(statusForCode(code)).toBe(status);
  });

  it("knows the gRPC status names but not OK or made-up names", () => {
    expect(isStatusName("ABORTED")).toBe(true);
    expect(isStatusName("OK")).toBe(false);
    expect(isStatusName("toString")).toBe(false);
  });
});
