import { execFile, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";
import { sessionWrittenAt, untilQueued } from "../harness/busy-session.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { jsonMessages, readmeShellBlocks } from "./readme-commands.js";

let server: ChildProcess;

/** Starts the README's run command, `npm start`, with no flags, and waits until it listens. */
beforeAll(async () => {
  server = spawn("npm", ["start"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not listen:\n${out}`)), 60_000);
    server.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes('"msg":"agentd listening"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    server.once("exit", (code) => reject(new Error(`npm start exited with ${code}:\n${out}`)));
  });
});

afterAll(async () => {
  if (server?.pid && server.exitCode === null) {
    process.kill(-server.pid, "SIGTERM");
    await once(server, "exit");
  }
});

/** Runs a README shell block as a user would (bash, grpcurl on the PATH), with placeholders filled in. */
async function sh(block: string, values: Record<string, string> = {}): Promise<string> {
  let script = block;
  for (const [name, value] of Object.entries(values)) script = script.replaceAll(name, value);
  const child = execFile("bash", ["-euo", "pipefail", "-c", script], {
    cwd: REPO_ROOT,
    env: { ...process.env, PATH: `${join(REPO_ROOT, ".tools/bin")}:${process.env.PATH}` },
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`README block failed (${code}):\n${script}\n${stderr}`);
  return stdout;
}

describe("the README's grpcurl walkthrough, verbatim, against npm start", () => {
  const blocks = readmeShellBlocks("Call it with grpcurl");

  it("has the list/describe, Chat and snapshot blocks", () => {
    expect(blocks).toHaveLength(3);
  });

  it("lists and describes the services by reflection", async () => {
    const out = await sh(blocks[0]!);
    expect(out).toContain("agentd.v1.AgentService\n");
    expect(out).toContain("grpc.health.v1.Health\n");
    expect(out).toContain("rpc Chat ( stream .agentd.v1.ChatRequest ) returns ( stream .agentd.v1.ChatResponse );");
    expect(out).toContain("message ChatRequest {");
  });

  it("runs a two-turn Chat, reads the session, and branches from the first snapshot", async () => {
    const responses = jsonMessages(await sh(blocks[1]!));
    const turnEnds = responses.filter((r) => r.chunk?.turnEnd).map((r) => r.chunk.turnEnd);
    expect(turnEnds.map((t) => t.turnIndex ?? 0)).toEqual([0, 1]);
    const output = responses.at(-1)!.output;
    expect(output.finishReason).toBe("FINISH_REASON_STOP");
    expect(output.message.content[0].text).toBe("echo: And again");

    const [latest, branch] = jsonMessages(
      await sh(blocks[2]!, { SESSION_ID: output.sessionId, FIRST_SNAPSHOT_ID: turnEnds[0].snapshotId }),
    );
    expect(latest!.snapshot.snapshotId).toBe(output.snapshotId);
    expect(latest!.snapshot.state.messages).toHaveLength(4);
    expect(branch!.output.sessionId).toBe(output.sessionId);
    expect(branch!.output.message.content[0].text).toBe("echo: A branch");
  });
});

describe("docs/background-work.md's commands, verbatim, against npm start", () => {
  const [block] = readmeShellBlocks(
    "Background work: detach, watch, abort, takeover, expiry",
    "docs/background-work.md",
  );
  const [detach, watch, attach, abort] = block!.split(/\n(?=# )/).filter((s) => s.trim());

  it("detaches, watches to completion, reads the stream after a sequence, and aborting a finished row reports its status", async () => {
    const detached = JSON.parse(await sh(detach!));
    expect(detached.output.finishReason).toBe("FINISH_REASON_DETACHED");
    const statuses = jsonMessages(await sh(watch!, { PENDING_ID: detached.output.snapshotId })).map((m) => m.status);
    expect(statuses).toEqual(["SNAPSHOT_STATUS_PENDING", "SNAPSHOT_STATUS_COMPLETED"]);
    const stream = jsonMessages(await sh(attach!, { PENDING_ID: detached.output.snapshotId }));
    const chunks = stream.filter((m) => m.chunk).map((m) => m.chunk);
    expect(chunks.map((c) => c.sequence)).toEqual(chunks.map((_, i) => i + 2)); // after sequence 1: 2, 3, …
    expect(chunks.at(-1).turnEnd.finishReason).toBe("FINISH_REASON_STOP");
    const text = chunks
      .flatMap((c) => c.modelChunk?.content ?? [])
      .map((p) => p.text)
      .join("");
    expect(text).toBe("a long job"); // "echo: " was chunk 1
    expect(stream.at(-1)!.output.message.content[0].text).toBe("echo: a long job");
    const aborted = JSON.parse(await sh(abort!, { PENDING_ID: detached.output.snapshotId }));
    expect(aborted.status).toBe("SNAPSHOT_STATUS_COMPLETED");
  });
});

describe("docs/protocols.md's curl example, verbatim, against npm start", () => {
  const [block, streaming] = readmeShellBlocks("Call it with curl (Connect, HTTP/1.1)", "docs/protocols.md");

  it("streams RunStream over Connect (HTTP/1.1) with buf curl", async () => {
    const env = `PATH=${join(REPO_ROOT, "node_modules/.bin")}:$PATH\n`;
    const messages = jsonMessages(await sh(env + streaming!));
    expect(messages.some((m) => m.chunk?.modelChunk)).toBe(true);
    const output = messages.at(-1)!.output;
    expect(output.finishReason).toBe("FINISH_REASON_STOP");
    expect(output.message.content[0].text).toBe("echo: hello there");
  });

  it("runs one turn with a Connect JSON request over HTTP/1.1", async () => {
    const reply = JSON.parse(await sh(block!));
    expect(reply.output.finishReason).toBe("FINISH_REASON_STOP");
    expect(reply.output.message.content[0].text).toBe("echo: hello");
  });
});

describe("docs/turns.md's busy-session command, verbatim, against npm start", () => {
  const blocks = readmeShellBlocks("Resume, branch, and client-managed state", "docs/turns.md");
  const enqueue = blocks.find((b) => b.includes("BUSY_POLICY_ENQUEUE"));

  it("waits with BUSY_POLICY_ENQUEUE while a Chat holds the session, then continues after its turn", async () => {
    expect(enqueue).toBeDefined();
    const client = agentServiceClient("http://127.0.0.1:50051", "grpc");
    const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("holding the session") });
    const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
    const writtenAt = await sessionWrittenAt(client, sessionId);
    const queued = sh(enqueue!, { SESSION_ID: sessionId });
    await untilQueued(client, sessionId, writtenAt); // grpcurl's call waits in line while the Chat holds the session
    await chat.finish();
    const reply = JSON.parse(await queued);
    expect(reply.output.message.content[0].text).toBe("echo: after the others");
    const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId });
    expect(snapshot?.state?.messages.map((m) => m.content[0]?.kind.value)).toEqual([
      "holding the session",
      "echo: holding the session",
      "after the others",
      "echo: after the others",
    ]);
  });
});

describe("docs/sessions.md's session lifecycle commands, verbatim, against npm start", () => {
  const [create, remove] = readmeShellBlocks("Sessions: list, label, delete, expire", "docs/sessions.md");

  it("creates a labelled session with a time-to-live, lists it by label, and deletes it", async () => {
    const [run, ...listed] = jsonMessages(await sh(create!));
    const sessionId = run!.output.sessionId as string;
    const sessions = listed[0]!.sessions as { sessionId: string; labels: Record<string, string>; ttl: string }[];
    const mine = sessions.find((s) => s.sessionId === sessionId);
    expect(mine).toMatchObject({ labels: { customer: "c-42" }, ttl: "86400s" });
    expect(JSON.parse(await sh(remove!, { SESSION_ID: sessionId }))).toEqual({ deleted: true });
    expect(JSON.parse(await sh(remove!, { SESSION_ID: sessionId }))).toEqual({});
  });
});

describe("docs/turns.md's cancel-and-steer Chat, verbatim, against npm start", () => {
  const block = readmeShellBlocks("Resume, branch, and client-managed state", "docs/turns.md").find((b) =>
    b.includes('"cancel": true'),
  );

  it("cancels the slow first turn, runs the next, and queues the late steer as a turn", async () => {
    expect(block).toBeDefined();
    const messages = jsonMessages(await sh(block!));
    const chunks = messages.flatMap((m) => (m.chunk ? [m.chunk] : []));
    const acks = chunks.flatMap((c) => (c.inputAck ? [c.inputAck] : []));
    expect(acks).toEqual([
      { requestId: "cancel-1", result: "INPUT_ACK_RESULT_CANCELLED" },
      { requestId: "steer-1", result: "INPUT_ACK_RESULT_QUEUED" },
    ]);
    const ends = chunks.flatMap((c) => (c.turnEnd ? [c.turnEnd.finishReason] : []));
    expect(ends).toEqual(["FINISH_REASON_ABORTED", "FINISH_REASON_STOP", "FINISH_REASON_STOP"]);
    expect(messages.at(-1)!.output.message.content[0].text).toBe("echo: and in French");
  });
});
