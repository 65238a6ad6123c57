import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, ListValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { snapshotTexts, useAgentd } from "../harness/use-agentd.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { createAgentClient } from "../../src/client/create-agent-client.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";

// Fork from an edited past (issue 41 item 3): AgentInit.state_patch and
// messages_patch, against a real agentd serving the fixture agents.
const agentd = useAgentd({ args: ["test/fixtures/agents.ts"] });

type Op = { op: string; path: string; value?: unknown; from?: string };

/** RFC 6902 operations as wire JsonPatchOperation inits. */
function ops(list: Op[]): { op: string; path: string; from: string; value?: ReturnType<typeof wireValue> }[] {
  return list.map((o) => ({
    op: o.op,
    path: o.path,
    from: o.from ?? "",
    ...(o.value !== undefined ? { value: wireValue(o.value) } : {}),
  }));
}

function wireValue(value: unknown): ReturnType<typeof fromJson<typeof ValueSchema>> {
  return fromJson(ValueSchema, value as JsonValue);
}

/** A "ledger-notes" session with one turn per text; its session ID and each turn's snapshot ID. */
async function notesSession(texts: string[]): Promise<{ sessionId: string; snapshots: string[] }> {
  const chat = new WireChat(agentd.client, { init: { agent: "ledger-notes" } });
  const snapshots: string[] = [];
  for (const text of texts) {
    chat.sendText(text);
    snapshots.push((await chat.nextTurn()).turnEnd.snapshotId);
  }
  const { output } = await chat.finish();
  return { sessionId: output.sessionId, snapshots };
}

async function custom(snapshotId: string): Promise<unknown> {
  const { snapshot } = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId });
  return snapshot?.state?.custom ? toJson(ValueSchema, snapshot.state.custom) : undefined;
}

function callError(err: unknown): ConnectError {
  return ConnectError.from(err);
}

describe("fork from an edited past: state_patch", () => {
  it("a Run from an earlier snapshot with a state patch commits a child of it whose custom state shows the edit", async () => {
    const { snapshots } = await notesSession(["a", "b", "c"]);
    const { output } = await agentd.client.run({
      init: {
        agent: "ledger-notes",
        snapshotId: snapshots[0],
        statePatch: ops([{ op: "replace", path: "/notes/0", value: "A (edited)" }]),
      },
      input: textInput("d"),
    });
    expect(output?.message?.content[0]?.kind.value).toBe("notes: A (edited),d");
    const { snapshot } = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: output!.snapshotId });
    expect(snapshot?.parentId).toBe(snapshots[0]);
    expect(toJson(ValueSchema, snapshot!.state!.custom!)).toEqual({ notes: ["A (edited)", "d"], count: 2 });
  });

  it("the child records the edit and who made it; GetSnapshot shows it", async () => {
    const { snapshots } = await notesSession(["a"]);
    const patch: Op[] = [
      { op: "test", path: "/count", value: 1 },
      { op: "add", path: "/notes/-", value: "inserted" },
    ];
    const { output } = await agentd.client.run({
      init: { agent: "ledger-notes", snapshotId: snapshots[0], statePatch: ops(patch) },
      input: textInput("x"),
    });
    const { snapshot } = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: output!.snapshotId });
    expect(snapshot?.edit?.editedBy).toBe("anonymous");
    expect(snapshot?.edit?.tenant).toBe("");
    expect(toJson(ListValueSchema, snapshot!.edit!.statePatch!)).toEqual(patch);
    const parent = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: snapshots[0] });
    expect(parent.snapshot?.edit).toBeUndefined();
  });

  it("leaves the other branch unchanged", async () => {
    const { snapshots } = await notesSession(["a", "b"]);
    const before = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: snapshots[1] });
    const parentBefore = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: snapshots[0] });
    await agentd.client.run({
      init: {
        agent: "ledger-notes",
        snapshotId: snapshots[0],
        statePatch: ops([{ op: "replace", path: "/notes", value: ["rewritten"] }]),
      },
      input: textInput("z"),
    });
    const after = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: snapshots[1] });
    const parentAfter = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: snapshots[0] });
    expect(after.snapshot).toEqual(before.snapshot);
    expect(parentAfter.snapshot).toEqual(parentBefore.snapshot);
    expect(await custom(snapshots[1]!)).toEqual({ notes: ["a", "b"], count: 2 });
  });

  it("the next turn of the forked branch builds on the edited state, without a second edit note", async () => {
    const { sessionId, snapshots } = await notesSession(["a", "b"]);
    const chat = new WireChat(agentd.client, {
      init: {
        agent: "ledger-notes",
        sessionId,
        statePatch: ops([{ op: "remove", path: "/notes/1" }]),
      },
      input: textInput("c"),
    });
    const first = await chat.nextTurn();
    expect(chunksText(first.chunks)).toBe("notes: a,c");
    chat.sendText("d");
    const second = await chat.nextTurn();
    expect(chunksText(second.chunks)).toBe("notes: a,c,d");
    await chat.finish();
    const one = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: first.turnEnd.snapshotId });
    const two = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: second.turnEnd.snapshotId });
    expect(one.snapshot?.parentId).toBe(snapshots[1]);
    expect(one.snapshot?.edit).toBeDefined();
    expect(two.snapshot?.parentId).toBe(first.turnEnd.snapshotId);
    expect(two.snapshot?.edit).toBeUndefined();
  });

  it("works with RunStream", async () => {
    const { snapshots } = await notesSession(["a"]);
    let text = "";
    let snapshotId = "";
    for await (const res of agentd.client.runStream({
      init: {
        agent: "ledger-notes",
        snapshotId: snapshots[0],
        statePatch: ops([{ op: "replace", path: "/notes/0", value: "streamed" }]),
      },
      input: textInput("b"),
    })) {
      if (res.chunk?.modelChunk) text += chunksText([res.chunk]);
      if (res.output) snapshotId = res.output.snapshotId;
    }
    expect(text).toBe("notes: streamed,b");
    expect(await custom(snapshotId)).toEqual({ notes: ["streamed", "b"], count: 2 });
  });

  it("refuses a patch that breaks the state schema with INVALID_ARGUMENT naming the path, and writes nothing", async () => {
    const { sessionId, snapshots } = await notesSession(["a"]);
    const err = await agentd.client
      .run({
        init: {
          agent: "ledger-notes",
          snapshotId: snapshots[0],
          statePatch: ops([{ op: "replace", path: "/count", value: "many" }]),
        },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/state_patch.*state schema.*count/);
    const page = await agentd.client.listSnapshots({ agent: "ledger-notes", sessionId });
    expect(page.snapshots.map((s) => s.snapshotId)).toEqual(snapshots);
  });

  it("refuses an operation that fails (a failed test) with INVALID_ARGUMENT naming the op's index", async () => {
    const { snapshots } = await notesSession(["a"]);
    const err = await agentd.client
      .run({
        init: {
          agent: "ledger-notes",
          snapshotId: snapshots[0],
          statePatch: ops([
            { op: "add", path: "/notes/-", value: "ok" },
            { op: "test", path: "/count", value: 7 },
          ]),
        },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/init\.state_patch\[1\] \(test "\/count"\)/);
  });

  it("refuses an operation on a path that does not exist with INVALID_ARGUMENT naming the op's index", async () => {
    const { snapshots } = await notesSession(["a"]);
    const err = await agentd.client
      .run({
        init: {
          agent: "ledger-notes",
          snapshotId: snapshots[0],
          statePatch: ops([{ op: "replace", path: "/missing/deep", value: 1 }]),
        },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/init\.state_patch\[0\]/);
  });

  it("refuses a state patch for a client-managed agent with FAILED_PRECONDITION", async () => {
    const err = await agentd.client
      .run({
        init: { agent: "notes", statePatch: ops([{ op: "add", path: "/notes/-", value: "x" }]) },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toMatch(/client-managed/);
  });

  it("refuses a state patch that starts a new session with INVALID_ARGUMENT", async () => {
    const err = await agentd.client
      .run({
        init: { agent: "ledger-notes", statePatch: ops([{ op: "add", path: "/notes", value: [] }]) },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/session_id or snapshot_id/);
  });

  it("refuses a state patch for an agent with a state transform with FAILED_PRECONDITION", async () => {
    const first = await agentd.client.run({ init: { agent: "redacted" }, input: textInput("hello") });
    const err = await agentd.client
      .run({
        init: {
          agent: "redacted",
          sessionId: first.output!.sessionId,
          statePatch: ops([{ op: "replace", path: "/secret", value: "mine" }]),
        },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).rawMessage).toMatch(/state transform/);
  });

  it("a retry with the same request ID and patch answers the committed turn; a different patch is INVALID_ARGUMENT", async () => {
    const { sessionId, snapshots } = await notesSession(["a"]);
    const requestId = crypto.randomUUID();
    const turn = async (value: string): Promise<string> => {
      const chat = new WireChat(agentd.client, {
        init: {
          agent: "ledger-notes",
          snapshotId: snapshots[0],
          statePatch: ops([{ op: "replace", path: "/notes/0", value }]),
        },
        input: { ...textInput("b"), requestId },
      });
      const { turnEnd } = await chat.nextTurn();
      await chat.finish();
      return turnEnd.snapshotId;
    };
    const first = await turn("edited");
    expect(await turn("edited")).toBe(first);
    const page = await agentd.client.listSnapshots({ agent: "ledger-notes", sessionId });
    expect(page.snapshots).toHaveLength(2);
    const err = await turn("edited differently").catch(callError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/request_id/);
  });

  it("a detached turn from an edited past: its background snapshot is a child of the resumed one, edited and noted", async () => {
    const { snapshots } = await notesSession(["a"]);
    const { output } = await agentd.client.run({
      init: {
        agent: "ledger-notes",
        snapshotId: snapshots[0],
        statePatch: ops([{ op: "replace", path: "/notes/0", value: "edited" }]),
      },
      input: { ...textInput("b"), detach: true },
    });
    expect(output?.finishReason).toBe(FinishReason.DETACHED);
    const statuses: SnapshotStatus[] = [];
    for await (const res of agentd.client.watchSnapshot({ agent: "ledger-notes", snapshotId: output!.snapshotId }))
      statuses.push(res.status);
    expect(statuses.at(-1)).toBe(SnapshotStatus.COMPLETED);
    const { snapshot } = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: output!.snapshotId });
    expect(snapshot?.parentId).toBe(snapshots[0]);
    expect(snapshot?.edit?.editedBy).toBe("anonymous");
    expect(toJson(ValueSchema, snapshot!.state!.custom!)).toEqual({ notes: ["edited", "b"], count: 2 });
  });

  it("the TypeScript client sends statePatch from its init", async () => {
    const { snapshots } = await notesSession(["a"]);
    const client = createAgentClient(agentd.server.baseUrl);
    const output = await client.run(
      "ledger-notes",
      { message: { role: "user", content: [{ text: "b" }] } },
      { snapshotId: snapshots[0], statePatch: [{ op: "replace", path: "/notes/0", value: "from the client" }] },
    );
    expect(await custom(output.snapshotId!)).toEqual({ notes: ["from the client", "b"], count: 2 });
  });
});

describe("fork from an edited past: messages_patch", () => {
  it("drops the history after a point: the fork's snapshot holds the edited history, the parent its own", async () => {
    const { snapshots } = await notesSession(["a", "b"]);
    const { output } = await agentd.client.run({
      init: {
        agent: "ledger-notes",
        snapshotId: snapshots[1],
        messagesPatch: ops([
          { op: "remove", path: "/3" },
          { op: "remove", path: "/2" },
        ]),
      },
      input: textInput("c"),
    });
    const { snapshot } = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: output!.snapshotId });
    expect(snapshotTexts(snapshot)).toEqual(["a", "notes: a", "c", "notes: a,b,c"]);
    expect(snapshot?.parentId).toBe(snapshots[1]);
    expect(snapshot?.edit?.messagesPatch).toBeDefined();
    const parent = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: snapshots[1] });
    expect(snapshotTexts(parent.snapshot)).toEqual(["a", "notes: a", "b", "notes: a,b"]);
  });

  it("replaces a message given in its wire JSON form", async () => {
    const { snapshots } = await notesSession(["a"]);
    const { output } = await agentd.client.run({
      init: {
        agent: "ledger-notes",
        snapshotId: snapshots[0],
        messagesPatch: ops([
          { op: "test", path: "/0/role", value: "ROLE_USER" },
          { op: "replace", path: "/0", value: { role: "ROLE_USER", content: [{ text: "A!" }] } },
        ]),
      },
      input: textInput("b"),
    });
    const { snapshot } = await agentd.client.getSnapshot({ agent: "ledger-notes", snapshotId: output!.snapshotId });
    expect(snapshotTexts(snapshot)).toEqual(["A!", "notes: a", "b", "notes: a,b"]);
  });

  it("refuses a patch that leaves a message malformed with INVALID_ARGUMENT naming it", async () => {
    const { snapshots } = await notesSession(["a"]);
    const err = await agentd.client
      .run({
        init: {
          agent: "ledger-notes",
          snapshotId: snapshots[0],
          messagesPatch: ops([{ op: "replace", path: "/1/content", value: [] }]),
        },
        input: textInput("b"),
      })
      .catch(callError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/messages_patch: message 1/);
  });
});
