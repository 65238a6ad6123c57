import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { valueFromWire } from "../../src/server/wire/index.js";

let server: AgentdProcess;
let client: ReturnType<typeof agentServiceClient>;
let storeDir: string;
beforeAll(async () => {
  storeDir = await mkdtemp(join(tmpdir(), "agentd-transforms-"));
  server = await startAgentd({ args: ["test/fixtures/agents.ts", "--store", `file:${storeDir}`] });
  client = agentServiceClient(server.baseUrl, "grpc");
});
afterAll(async () => {
  await server?.stop();
});

/** The raw row the file store persisted (its files wrap the row as `snapshot`). */
async function storedRow(snapshotId: string): Promise<{ state: { custom: Record<string, unknown> } }> {
  return JSON.parse(await readFile(join(storeDir, `${snapshotId}.json`), "utf8")).snapshot;
}

describe("state transform", () => {
  it("redacts GetSnapshot while the store keeps the raw state", async () => {
    const { output } = await client.run({ init: { agent: "redacted" }, input: textInput("hello") });
    const { snapshot } = await client.getSnapshot({ agent: "redacted", snapshotId: output!.snapshotId });
    expect(valueFromWire(snapshot?.state?.custom)).toEqual({ visible: "hello" });
    expect((await storedRow(output!.snapshotId)).state.custom).toEqual({ visible: "hello", secret: "secret-of-hello" });
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
    const file = join(storeDir, `${output!.snapshotId}.json`);
    const stored = JSON.parse(await readFile(file, "utf8"));
    stored.snapshot.state.custom.visible = "explode";
    await writeFile(file, JSON.stringify(stored));
    const err = await client.getSnapshot({ agent: "redacted", snapshotId: output!.snapshotId }).catch((e) => e);
    expect(ConnectError.from(err).code).toBe(Code.PermissionDenied);
  });
});
