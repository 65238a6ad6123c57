import { fromBinary, toBinary, toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  AgentOutputSchema,
  AgentStreamChunkSchema,
  AgentInfoSchema,
  AgentInitSchema,
  AgentInputSchema,
} from "../../gen/ts/agentd/v1/agent_pb.js";
import { PartSchema } from "../../gen/ts/agentd/v1/content_pb.js";
import { FinishReason, SnapshotSchema, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { AgentError } from "../../src/errors/agent-error.js";
import type { AgentDescriptor, AgentInput, AgentOutput, AgentStreamChunk } from "../../src/types/agent-io.js";
import type { Message, Part } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import type { SessionSnapshot } from "../../src/types/snapshot.js";
import {
  agentInfoFromWire,
  agentInfoToWire,
  agentInitFromWire,
  agentInitToWire,
  agentInputFromWire,
  agentInputToWire,
  agentOutputFromWire,
  agentOutputToWire,
  messageFromWire,
  messageToWire,
  partFromWire,
  partToWire,
  patchOperationFromWire,
  sessionStateFromWire,
  sessionStateToWire,
  snapshotFromWire,
  snapshotToWire,
  streamChunkFromWire,
  streamChunkToWire,
} from "../../src/protocol/index.js";

/** Serializes and parses again, so round trips cover the binary encoding too. */
function overTheWire<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): MessageShape<Desc> {
  return fromBinary(schema, toBinary(schema, message));
}

const everyPart: Part[] = [
  { text: "hello", metadata: { lang: "en", n: 1 } },
  { media: { url: "https://example.com/a.png", contentType: "image/png" } },
  { toolRequest: { ref: "r1", name: "search", input: { q: "agents", limit: 3, tags: ["a", null] } } },
  { toolResponse: { ref: "r1", name: "search", output: [1, "two", { three: true }] } },
  { data: { nested: { deep: [1, 2, 3] } } },
  { data: null },
  { reasoning: "thinking" },
  { custom: { kind: "widget", size: 2 } },
];

const state: SessionState = {
  sessionId: "sess-1",
  messages: [
    { role: "user", content: [{ text: "hi" }] },
    { role: "model", content: [{ text: "echo: hi" }], metadata: { model: "echo" } },
    { role: "system", content: [{ text: "be brief" }] },
    { role: "tool", content: [{ toolResponse: { name: "t", output: 1 } }] },
  ],
  custom: { tasks: [{ id: 1, title: "write", done: false }], nextId: 2 },
  artifacts: [
    { name: "tasks.md", parts: [{ text: "- [ ] write" }] },
    { parts: [{ text: "unnamed" }], metadata: { a: 1 } },
  ],
};

describe("content wire", () => {
  it.each(everyPart.map((p) => [Object.keys(p)[0], p] as const))("round-trips a %s part", (_kind, part) => {
    const wire = partToWire(part);
    expect(partFromWire(overTheWire(PartSchema, wire))).toEqual(part);
  });

  it("round-trips a message with every part kind and metadata", () => {
    const message: Message = { role: "model", content: everyPart, metadata: { echoDelayMs: 5 } };
    expect(messageFromWire(messageToWire(message))).toEqual(message);
  });

  it("reads an unspecified role as the given default", () => {
    const wire = messageToWire({ role: "user", content: [{ text: "x" }] });
    wire.role = 0;
    expect(messageFromWire(wire, "model").role).toBe("model");
  });

  it("drops undefined members of metadata instead of failing", () => {
    const wire = partToWire({ text: "x", metadata: { keep: 1, drop: undefined } });
    expect(partFromWire(wire).metadata).toEqual({ keep: 1 });
  });
});

describe("state wire", () => {
  it("round-trips a session state with custom state and artifacts", () => {
    expect(sessionStateFromWire(sessionStateToWire(state))).toEqual(state);
  });

  it("round-trips an init with agent name, IDs and state through binary", () => {
    const wire = overTheWire(AgentInitSchema, agentInitToWire("tasks", { sessionId: "s", snapshotId: "p", state }));
    expect(agentInitFromWire(wire)).toEqual({ agent: "tasks", init: { sessionId: "s", snapshotId: "p", state } });
  });

  it("reads empty init IDs as absent", () => {
    expect(agentInitFromWire(agentInitToWire("assistant"))).toEqual({ agent: "assistant", init: {} });
  });

  it("round-trips an input with message, resume and detach", () => {
    const input: AgentInput = {
      message: { role: "user", content: [{ text: "go" }] },
      resume: {
        respond: [{ toolResponse: { ref: "1", name: "t", output: "ok" } }],
        restart: [{ toolRequest: { name: "u" } }],
      },
      detach: true,
    };
    expect(agentInputFromWire(overTheWire(AgentInputSchema, agentInputToWire(input)))).toEqual(input);
  });
});

describe("stream wire", () => {
  it("round-trips model chunks, patches, artifacts and turn ends", () => {
    const chunks: AgentStreamChunk[] = [
      { modelChunk: { role: "model", content: [{ text: "ec" }], index: 0 } },
      {
        customPatch: [
          { op: "replace", path: "", value: { notes: [] } },
          { op: "add", path: "/notes/-", value: "n" },
          { op: "add", path: "/nothing", value: null },
          { op: "remove", path: "/notes/0" },
          { op: "move", path: "/b", from: "/a" },
        ],
      },
      { artifact: { name: "tasks.md", parts: [{ text: "x" }] } },
      { turnEnd: { snapshotId: "snap-1", finishReason: "stop", turnIndex: 1, sessionId: "sess-1" } },
      { turnEnd: { finishReason: "failed", turnIndex: 0, sessionId: "sess-1" } },
    ];
    for (const chunk of chunks) {
      expect(streamChunkFromWire(overTheWire(AgentStreamChunkSchema, streamChunkToWire(chunk)))).toEqual(chunk);
    }
  });

  it('sets path on every patch operation, so proto JSON carries the root path ""', () => {
    const wire = streamChunkToWire({
      customPatch: [
        { op: "replace", path: "", value: { a: 1 } },
        { op: "remove", path: "/a" },
      ],
    });
    expect(toJson(AgentStreamChunkSchema, wire)).toEqual({
      customPatch: [
        { op: "replace", path: "", value: { a: 1 } },
        { op: "remove", path: "/a" },
      ],
    });
    // An operation from a peer that leaves path unset reads as the root.
    const unset = overTheWire(
      AgentStreamChunkSchema,
      streamChunkToWire({ customPatch: [{ op: "replace", path: "", value: 1 }] }),
    );
    delete unset.customPatch[0]!.path;
    expect(streamChunkFromWire(unset).customPatch![0]!.path).toBe("");
  });

  it("keeps a null patch value distinct from a missing one", () => {
    const wire = streamChunkToWire({
      customPatch: [
        { op: "add", path: "/x", value: null },
        { op: "remove", path: "/y" },
      ],
    });
    expect(wire.customPatch[0].value).toBeDefined();
    expect(wire.customPatch[1].value).toBeUndefined();
  });

  it("rejects an unknown patch op with INVALID_ARGUMENT", () => {
    const wire = streamChunkToWire({ customPatch: [{ op: "add", path: "/x", value: 1 }] });
    wire.customPatch[0].op = "merge";
    expect(() => patchOperationFromWire(wire.customPatch[0])).toThrow(AgentError);
    expect(() => patchOperationFromWire(wire.customPatch[0])).toThrow(/unknown JSON Patch op "merge"/);
  });

  it("round-trips a failed output with error details and a client-managed state", () => {
    const output: AgentOutput = {
      sessionId: "s",
      snapshotId: "p",
      message: { role: "model", content: [{ text: "partial" }] },
      artifacts: [{ name: "a", parts: [{ text: "b" }] }],
      state,
      finishReason: "failed",
      error: { status: "INTERNAL", message: "boom", details: { step: 2 } },
    };
    const wire = overTheWire(AgentOutputSchema, agentOutputToWire(output));
    expect(wire.finishReason).toBe(FinishReason.FAILED);
    expect(agentOutputFromWire(wire)).toEqual(output);
  });
});

describe("snapshot wire", () => {
  const snapshot: SessionSnapshot = {
    snapshotId: "snap-2",
    sessionId: "sess-1",
    parentId: "snap-1",
    turnIndex: 1,
    createdAt: 1_700_000_000_123,
    updatedAt: 1_700_000_000_456,
    heartbeatAt: 1_700_000_000_789,
    status: "completed",
    finishReason: "stop",
    state,
  };

  it("round-trips every field with millisecond timestamps", () => {
    const wire = overTheWire(SnapshotSchema, snapshotToWire(snapshot));
    expect(wire.status).toBe(SnapshotStatus.COMPLETED);
    expect(wire.createdAt?.nanos).toBe(123_000_000);
    expect(snapshotFromWire(wire)).toEqual(snapshot);
  });

  it("round-trips a pending snapshot's inputs (message, resume, request ID, completed)", () => {
    const pending: SessionSnapshot = {
      ...snapshot,
      status: "pending",
      pendingInputs: [
        { message: { role: "user", content: [{ text: "go" }] }, requestId: "r1", completed: true },
        { resume: { restart: [{ toolRequest: { ref: "t1", name: "lookup", input: { q: 1 } } }] }, completed: false },
      ],
    };
    delete pending.finishReason;
    delete pending.state;
    const wire = overTheWire(SnapshotSchema, snapshotToWire(pending));
    expect(wire.pendingInputs.map((i) => [i.requestId, i.completed, i.restart.length])).toEqual([
      ["r1", true, 0],
      ["", false, 1],
    ]);
    expect(snapshotFromWire(wire)).toEqual(pending);
    expect(snapshotFromWire(overTheWire(SnapshotSchema, snapshotToWire(snapshot))).pendingInputs).toBeUndefined();
  });

  it("omits the state when includeState is false", () => {
    expect(snapshotToWire(snapshot, { includeState: false }).state).toBeUndefined();
  });

  it("round-trips a failed snapshot's error and an unknown status name as UNKNOWN", () => {
    const failed: SessionSnapshot = {
      ...snapshot,
      status: "failed",
      finishReason: "failed",
      error: { status: "ABORTED", message: "x" },
    };
    expect(snapshotFromWire(snapshotToWire(failed))).toEqual(failed);
    const wire = snapshotToWire(failed);
    wire.error!.status = "NOT_A_STATUS";
    expect(snapshotFromWire(wire).error?.status).toBe("UNKNOWN");
  });
});

describe("agent info wire", () => {
  it("round-trips a descriptor with its JSON Schema", () => {
    const agent: AgentDescriptor = {
      name: "tasks",
      description: "keeps a task list",
      stateManagement: "client",
      abortable: true,
      stateSchema: { type: "object", properties: { nextId: { type: "integer" } }, required: ["nextId"] },
    };
    expect(agentInfoFromWire(overTheWire(AgentInfoSchema, agentInfoToWire(agent)))).toEqual(agent);
  });
});
