import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { valueFromWire } from "../../src/protocol/index.js";
import { storedSnapshot } from "../harness/stored-records.js";

let server: AgentdProcess;
let client: ReturnType<typeof agentServiceClient>;
let store: string;
beforeAll(async () => {
  store = `sqlite:${join(await mkdtemp(join(tmpdir(), "agentd-transforms-")), "agentd.db")}`;
  server = await startAgentd({ args: ["test/fixtures/agents.ts", "--store", store] });
  client = agentServiceClient(server.baseUrl, "grpc");
});
afterAll(async () => {
  await server?.stop();
});

describe("state transform", () => {
  it("redacts GetSnapshot while the store keeps the raw state", async () => {
    const { output } = await client.run({ init: { agent: "redacted" }, input: textInput("hello") });
    const { snapshot } = await client.getSnapshot({ agent: "redacted", snapshotId: output!.snapshotId });
    expect(valueFromWire(snapshot?.state?.custom)).toEqual({ visible: "hello" });
    expect((await storedSnapshot(store, output!.snapshotId)).state?.custom).toEqual({
      visible: "hello",
      secret: "secret-of-hello",
    });
  });

  it("redacts the custom patch stream", async () => {
    const chat = new WireChat(client, { init: { agent: "redacted" }, input: textInput("one") });
    chat.sendText("two");
    const turns = [await chat.nextTurn(), await chat.nextTurn()];
    await chat.finish();
    const patches = turns.flatMap((t) => t.chunks.flatMap((c) => c.customPatch));
    expect(patches.length).toBeGreaterThan(0);
    expect(JSON.stringify(patches.map((p) => [p.path, valueFromWire(p.value)]))).not.toContain("secret");
  });

  it("redacts client-managed output state", async () => {
    const { output } = await client.run({ init: { agent: "redacted-client" }, input: textInput("hi") });
    expect(valueFromWire(output?.state?.custom)).toEqual({ visible: "hi" });
  });

  it("fails the invocation closed with the transform's status", async () => {
    const err = await client.run({ init: { agent: "redacted" }, input: textInput("explode") }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.PermissionDenied);
  });

  it("fails GetSnapshot closed with the transform's status", async () => {
    const { output } = await client.run({ init: { agent: "redacted" }, input: textInput("calm") });
    const request = { agent: "redacted", snapshotId: output!.snapshotId };
    const err = await client.getSnapshot(request, { headers: { "x-redaction": "refuse" } }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.PermissionDenied);
    expect(err.message).not.toContain("secret-of-calm");
  });
});

describe("chunk transform", () => {
  it("rewrites and drops streamed chunks, while the snapshot keeps the raw text", async () => {
    const chunks: string[] = [];
    let snapshotId = "";
    for await (const res of client.runStream({
      init: { agent: "censored" },
      input: textInput("my password is hunter2 ok"),
    })) {
      const part = res.chunk?.modelChunk?.content[0]?.kind;
      if (part?.case === "text") chunks.push(part.value);
      if (res.output) snapshotId = res.output.snapshotId;
    }
    expect(chunks.join("")).toBe("echo: my ******** is ok");
    expect((await storedSnapshot(store, snapshotId)).state?.messages.at(-1)?.content[0]?.text).toBe(
      "echo: my password is hunter2 ok",
    );
  });

  it("fails the stream closed with the transform's status", async () => {
    const err = await client.run({ init: { agent: "censored" }, input: textInput("please explode") }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.PermissionDenied);
  });
});
