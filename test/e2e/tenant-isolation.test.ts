import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { AgentService } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { defaultStoreUri, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { snapshotTexts } from "../harness/use-agentd.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { failure } from "../harness/call-failure.js";

const TOKEN_A = "tenant-a-token-0123456789abcdef";
const TOKEN_A2 = "tenant-a-second-token-0123456789";
const TOKEN_B = "tenant-b-token-0123456789abcdef";

/** The message with `id` replaced, to compare answers for a foreign ID and an unknown one. */
const shape = (err: ConnectError, id: string): string => err.rawMessage.replaceAll(id, "<id>");

const stores: [string, () => string][] = [
  ["the test project's store", () => defaultStoreUri()],
  ["an SQLite store", () => `sqlite:${join(mkdtempSync(join(tmpdir(), "agentd-tenants-")), "agentd.db")}`],
];

describe.each(stores)("sessions are owned by the caller's tenant, on %s", (_name, storeUri) => {
  let server: AgentdProcess;
  let a: Client<typeof AgentService>;
  let a2: Client<typeof AgentService>;
  let b: Client<typeof AgentService>;
  let sessionId: string;
  let completedId: string;
  let pendingId: string;

  beforeAll(async () => {
    const tokens = writeTokensFile([
      `${TOKEN_A} tenant-a alice`,
      `${TOKEN_A2} tenant-a alice-batch`,
      `${TOKEN_B} tenant-b bob`,
    ]);
    server = await startAgentd({
      args: ["--store", storeUri(), "--auth-tokens", tokens, "--heartbeat-interval-ms", "100"],
    });
    a = clientWithToken(server.baseUrl, TOKEN_A);
    a2 = clientWithToken(server.baseUrl, TOKEN_A2);
    b = clientWithToken(server.baseUrl, TOKEN_B);
    const chat = new WireChat(a, { init: { agent: "assistant" }, input: textInput("secret plan") });
    const first = await chat.nextTurn();
    sessionId = first.turnEnd.sessionId;
    completedId = first.turnEnd.snapshotId;
    // A background turn slow enough to stay pending while tenant B tries it.
    chat.send({ input: { ...textInput("more", { echoDelayMs: 400 }), detach: true } });
    const { output } = await chat.drain();
    expect(output.finishReason).toBe(FinishReason.DETACHED);
    pendingId = output.snapshotId;
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** The calls made on the pending (detached) snapshot rather than the completed one. */
  const onPendingWork = (name: string): boolean => ["Abort", "WatchSnapshot", "AttachInvocation"].includes(name);

  it("answers another tenant's reads, resumes and aborts NOT_FOUND exactly as for unknown IDs, and changes nothing", async () => {
    const unknownSession = "0190aaaa-0000-7000-8000-000000000000";
    const unknownSnapshot = "0190bbbb-0000-7000-8000-000000000000";
    const attempts: [string, (session: string, snapshot: string) => Promise<unknown>][] = [
      ["GetSnapshot by session", (s) => b.getSnapshot({ agent: "assistant", sessionId: s })],
      ["GetSnapshot by snapshot", (_s, snap) => b.getSnapshot({ agent: "assistant", snapshotId: snap })],
      ["ListSnapshots", (s) => b.listSnapshots({ agent: "assistant", sessionId: s })],
      [
        "WatchSnapshot",
        async (_s, snap) => {
          for await (const _ of b.watchSnapshot({ agent: "assistant", snapshotId: snap }));
        },
      ],
      ["Abort", (_s, snap) => b.abort({ agent: "assistant", snapshotId: snap })],
      [
        "AttachInvocation",
        async (_s, snap) => {
          for await (const _ of b.attachInvocation({ agent: "assistant", snapshotId: snap }));
        },
      ],
      [
        "Run resuming the session",
        (s) => b.run({ init: { agent: "assistant", sessionId: s }, input: textInput("hijack") }),
      ],
      [
        "Run resuming the snapshot",
        (_s, snap) => b.run({ init: { agent: "assistant", snapshotId: snap }, input: textInput("hijack") }),
      ],
    ];
    for (const [name, attempt] of attempts) {
      const foreign = await failure(() => attempt(sessionId, onPendingWork(name) ? pendingId : completedId));
      const unknown = await failure(() => attempt(unknownSession, unknownSnapshot));
      expect(foreign.code, name).toBe(Code.NotFound);
      expect(unknown.code, name).toBe(Code.NotFound);
      const foreignId =
        name.includes("session") || name === "ListSnapshots"
          ? sessionId
          : onPendingWork(name)
            ? pendingId
            : completedId;
      const unknownId = name.includes("session") || name === "ListSnapshots" ? unknownSession : unknownSnapshot;
      expect(shape(foreign, foreignId), name).toBe(shape(unknown, unknownId));
    }
    // Tenant A's work was neither aborted nor written into: it completes with exactly A's turns.
    const statuses: SnapshotStatus[] = [];
    for await (const res of a.watchSnapshot({ agent: "assistant", snapshotId: pendingId })) statuses.push(res.status);
    expect(statuses.at(-1)).toBe(SnapshotStatus.COMPLETED);
    const latest = await a.getSnapshot({ agent: "assistant", sessionId });
    expect(latest.snapshot?.snapshotId).toBe(pendingId);
    expect(snapshotTexts(latest.snapshot)).toEqual(["secret plan", "echo: secret plan", "more", "echo: more"]);
    const listed = await a.listSnapshots({ agent: "assistant", sessionId });
    expect(listed.snapshots.map((s) => s.snapshotId).sort()).toEqual([completedId, pendingId].sort());
  });

  it("lets every caller of the same tenant reach the session", async () => {
    const res = await a2.getSnapshot({ agent: "assistant", sessionId });
    expect(res.snapshot?.sessionId).toBe(sessionId);
    const { output } = await a2.run({
      init: { agent: "assistant", sessionId },
      input: textInput("from the batch job"),
    });
    expect(output?.finishReason).toBe(FinishReason.STOP);
  });
});
