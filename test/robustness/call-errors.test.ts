import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  dropUnreachableDeadline,
  isClientGoneError,
  shortenMessage,
  truncateEcho,
} from "../../src/server/call-errors.js";
import { toCallError, toConnectError } from "../../src/server/error-mapping.js";
import { jsonDepth } from "../../src/server/request-validation.js";

describe("echoed input in error messages", () => {
  it("keeps short values and cuts long ones to a prefix plus their length", () => {
    expect(truncateEcho("abc")).toBe("abc");
    expect(truncateEcho("x".repeat(201))).toBe(`${"x".repeat(200)}…(201 chars)`);
    const message = shortenMessage(`session "${"s".repeat(100_000)}" not found`);
    expect(message).toBe(`session "${"s".repeat(200)}…(100000 chars)" not found`);
    expect(shortenMessage("y ".repeat(5000)).length).toBeLessThanOrEqual(1024 + 20);
  });

  it("toConnectError shortens AgentError messages and details", () => {
    const id = "i".repeat(50_000);
    const err = toConnectError(new AgentError("NOT_FOUND", `unknown session "${id}"`, { details: { sessionId: id } }));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage.length).toBeLessThan(300);
    const details = err.metadata.get("agentd-error-details")!;
    expect(details.length).toBeLessThan(300);
    expect(JSON.parse(details)).toEqual({ sessionId: `${"i".repeat(200)}…(50000 chars)` });
    // Non-ASCII details survive as JSON escapes (header values must be Latin-1).
    const unicode = toConnectError(new AgentError("NOT_FOUND", "x", { details: { sessionId: "séssion-✓" } }));
    expect(JSON.parse(unicode.metadata.get("agentd-error-details")!)).toEqual({ sessionId: "séssion-✓" });
  });
});

describe("call error classification", () => {
  it("undecodable requests are INVALID_ARGUMENT, client write failures CANCELLED, deadlines DEADLINE_EXCEEDED", () => {
    expect(toCallError(new ConnectError("parse binary: premature EOF", Code.Internal)).code).toBe(Code.InvalidArgument);
    const ecanceled = Object.assign(new Error("write ECANCELED"), { code: "ECANCELED" });
    expect(isClientGoneError(ecanceled)).toBe(true);
    expect(toCallError(ecanceled).code).toBe(Code.Canceled);
    expect(toCallError(new ConnectError("write ECANCELED", Code.Internal, undefined, undefined, ecanceled)).code).toBe(
      Code.Canceled,
    );
    expect(toCallError(new Error("boom")).code).toBe(Code.Internal);
    const deadline = new AbortController();
    deadline.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    expect(toCallError(new AgentError("CANCELLED", "the client cancelled the invocation"), deadline.signal).code).toBe(
      Code.DeadlineExceeded,
    );
    const cancelled = new AbortController();
    cancelled.abort(new ConnectError("http/2 stream closed", Code.Canceled));
    expect(toCallError(new AgentError("CANCELLED", "the client cancelled the invocation"), cancelled.signal).code).toBe(
      Code.Canceled,
    );
  });

  it("drops deadlines a Node timer cannot hold and keeps the rest", () => {
    const h = (v: Record<string, string>) => {
      const headers: Record<string, string> = { ...v };
      dropUnreachableDeadline(headers);
      return headers;
    };
    expect(h({ "grpc-timeout": "596H" })).toEqual({ "grpc-timeout": "596H" });
    expect(h({ "grpc-timeout": "597H" })).toEqual({});
    expect(h({ "grpc-timeout": "99999999M" })).toEqual({});
    expect(h({ "grpc-timeout": "1m" })).toEqual({ "grpc-timeout": "1m" });
    expect(h({ "grpc-timeout": "bad" })).toEqual({ "grpc-timeout": "bad" });
    expect(h({ "connect-timeout-ms": "2147483647" })).toEqual({ "connect-timeout-ms": "2147483647" });
    expect(h({ "connect-timeout-ms": "2147483648" })).toEqual({});
  });

  it("measures JSON nesting of plain objects and of google.protobuf.Value messages alike", () => {
    expect(jsonDepth({ a: 1 }, 100, true)).toBe(1);
    expect(jsonDepth({ a: { b: [1] } }, 100, true)).toBe(3);
    expect(jsonDepth("x", 100, true)).toBe(0);
    const value = {
      $typeName: "google.protobuf.Value",
      kind: {
        case: "structValue",
        value: {
          $typeName: "google.protobuf.Struct",
          fields: {
            a: {
              $typeName: "google.protobuf.Value",
              kind: { case: "listValue", value: { $typeName: "google.protobuf.ListValue", values: [] } },
            },
          },
        },
      },
    };
    expect(jsonDepth(value, 100)).toBe(2);
    expect(jsonDepth({ a: { b: { c: {} } } }, 2, true)).toBe(2);
  });
});
