import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { AgentError } from "../../src/errors/agent-error.js";
import {
  committedRequest,
  DEFAULT_REQUEST_WINDOW,
  inputFingerprint,
  requestSessionId,
  validRequestId,
  withCommittedRequest,
} from "../../src/runtime/sessions/request-ledger.js";
import { sessionSettings } from "../../src/runtime/sessions/session-settings.js";
import type { AgentInput } from "../../src/types/agent-io.js";
import type { CommittedRequest, SessionHead } from "../../stores/snapshot-store.js";

const T0 = 1_700_000_000_000;
const HOUR = 3600 * 1000;

function entry(requestId: string, committedAt: number): CommittedRequest {
  return { requestId, snapshotId: `snap-${requestId}`, committedAt };
}

function headWith(requests: CommittedRequest[]): SessionHead {
  return {
    sessionId: "s",
    agent: "a",
    owner: "",
    headSnapshotId: "x",
    turnCount: 1,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
    requests,
  };
}

describe("request IDs: validation", () => {
  it("accepts a UUID and up to 64 characters of [A-Za-z0-9_-]; empty means none", () => {
    expect(validRequestId("0b7f3d2e-6c1a-4f7e-9d2b-1c3a5e7f9b0d")).toBe("0b7f3d2e-6c1a-4f7e-9d2b-1c3a5e7f9b0d");
    expect(validRequestId("A_z-9".repeat(12) + "abcd")).toHaveLength(64);
    expect(validRequestId("")).toBeUndefined();
    expect(validRequestId(undefined)).toBeUndefined();
  });

  it("refuses 65 characters or any other character with INVALID_ARGUMENT naming the field", () => {
    for (const bad of ["a".repeat(65), "has space", "slash/", "dot.", "ünï"]) {
      const err = (() => {
        try {
          validRequestId(bad, "request_id");
        } catch (e) {
          return e as AgentError;
        }
      })();
      expect(err?.status, bad).toBe("INVALID_ARGUMENT");
      expect(err?.message).toContain("request_id must be at most 64 characters");
    }
  });
});

describe("request IDs: the committed window", () => {
  it("keeps only the most recent `kept` request IDs, oldest dropped first", () => {
    let requests: CommittedRequest[] | undefined;
    for (let i = 0; i < 5; i++)
      requests = withCommittedRequest(requests, entry(`r${i}`, T0 + i), { kept: 3, ttlMs: HOUR });
    expect(requests!.map((r) => r.requestId)).toEqual(["r2", "r3", "r4"]);
  });

  it("drops entries older than ttlMs when the next one is committed", () => {
    const old = [entry("old", T0), entry("recent", T0 + HOUR / 2)];
    const next = withCommittedRequest(old, entry("new", T0 + HOUR + 1), { kept: 32, ttlMs: HOUR });
    expect(next.map((r) => r.requestId)).toEqual(["recent", "new"]);
  });

  it("finds a committed request ID within ttlMs and forgets it after", () => {
    const head = headWith([entry("a", T0), entry("b", T0 + 10)]);
    expect(committedRequest(head, "a", DEFAULT_REQUEST_WINDOW, T0 + 1000)?.snapshotId).toBe("snap-a");
    expect(committedRequest(head, "a", { kept: 32, ttlMs: 500 }, T0 + 1000)).toBeUndefined();
    expect(committedRequest(head, "zzz", DEFAULT_REQUEST_WINDOW, T0)).toBeUndefined();
    expect(committedRequest(undefined, "a", DEFAULT_REQUEST_WINDOW, T0)).toBeUndefined();
  });

  it("is configured through the session settings, and refuses a window below 1", () => {
    expect(sessionSettings({ requestWindow: { kept: 8 } }).claims.requestWindow).toEqual({
      kept: 8,
      ttlMs: DEFAULT_REQUEST_WINDOW.ttlMs,
    });
    expect(() => sessionSettings({ requestWindow: { ttlMs: 0 } })).toThrow(
      /requestWindow.ttlMs must be an integer >= 1/,
    );
  });
});

describe("request IDs: fingerprints and derived sessions", () => {
  it("fingerprints an input the same whatever its key order and request ID, and another input differently", () => {
    const a = inputFingerprint({
      message: { role: "user", content: [{ text: "hi" }], metadata: { x: 1, y: 2 } },
      requestId: "one",
    });
    const b = inputFingerprint({
      requestId: "two",
      message: { metadata: { y: 2, x: 1 }, content: [{ text: "hi" }], role: "user" },
    });
    const c = inputFingerprint({ message: { role: "user", content: [{ text: "hi!" }] } });
    expect(a).toBe(b);
    expect(a).not.toBe(c);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });

  it("is the SHA-256 (hex) of the input's canonical JSON without its request ID, as stored by every earlier version", () => {
    // The documented form, written out by hand: keys sorted by UTF-16 code unit, undefined members left out,
    // an undefined array element as null. Records in stores keep fingerprints made this way.
    const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
    const input = {
      requestId: "r-1",
      message: {
        role: "user",
        metadata: { b: [1, undefined, "x"], a: null, é: true, Z: { "10": 1, "2": 2 }, gone: undefined },
        content: [{ text: 'say "hi"\n' }],
      },
    } as unknown as AgentInput;
    const canonical =
      '{"message":{"content":[{"text":"say \\"hi\\"\\n"}],"metadata":{"Z":{"10":1,"2":2},"a":null,"b":[1,null,"x"],"é":true},"role":"user"}}';
    expect(inputFingerprint(input)).toBe(sha256(canonical));
    const edit = { messages: { op: "truncate", keep: 2 } };
    expect(inputFingerprint(input, edit)).toBe(
      sha256(`{"initEdit":{"messages":{"keep":2,"op":"truncate"}},"input":${canonical}}`),
    );
  });

  it("derives one UUID-shaped session ID per owner, agent and request ID", () => {
    const id = requestSessionId("tenant", "agent", "req");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(requestSessionId("tenant", "agent", "req")).toBe(id);
    expect(requestSessionId("other", "agent", "req")).not.toBe(id);
    expect(requestSessionId("tenant", "other", "req")).not.toBe(id);
    expect(requestSessionId("tenant", "agent", "req2")).not.toBe(id);
  });
});
