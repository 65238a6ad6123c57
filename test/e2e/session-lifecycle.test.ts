import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { FinishReason, SnapshotStatus } from "../../gen/ts/agentd/v1/state_pb.js";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { useAgentd } from "../harness/use-agentd.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { failure } from "../harness/call-failure.js";
import { until } from "../harness/until.js";
import { sqliteValue } from "../harness/sqlite-rows.js";

const agentd = useAgentd({ args: ["--heartbeat-interval-ms", "100"] });

/** A new session with one turn and these labels; its ID. */
async function session(labels: Record<string, string>, agent = "assistant"): Promise<string> {
  const { output } = await agentd.client.run({ init: { agent, labels }, input: textInput("hi") });
  return output!.sessionId;
}

/** Every session ListSessions returns for the request, following page tokens. */
async function listAll(request: {
  agent?: string;
  labels?: Record<string, string>;
  pageSize?: number;
}): Promise<string[]> {
  const ids: string[] = [];
  let pageToken = "";
  do {
    const page = await agentd.client.listSessions({ ...request, pageToken });
    ids.push(...page.sessions.map((s) => s.sessionId));
    pageToken = page.nextPageToken;
  } while (pageToken);
  return ids;
}

describe("session lifecycle RPCs", () => {
  it("creates sessions with labels, lists them by label, deletes one and leaves the rest intact", async () => {
    const run = `run-${Date.now()}`;
    const a = await session({ run, team: "red" });
    const b = await session({ run, team: "blue" });
    const c = await session({ run, team: "red" });
    expect((await listAll({ labels: { run } })).sort()).toEqual([a, b, c].sort());
    expect(await listAll({ labels: { run, team: "red" } })).toEqual([c, a]);

    expect((await agentd.client.deleteSession({ sessionId: a })).deleted).toBe(true);
    expect((await agentd.client.deleteSession({ sessionId: a })).deleted).toBe(false);
    expect(await listAll({ labels: { run } })).toEqual([c, b]);
    for (const call of [
      () => agentd.client.getSession({ sessionId: a }),
      () => agentd.client.getSnapshot({ agent: "assistant", sessionId: a }),
      () => agentd.client.listSnapshots({ agent: "assistant", sessionId: a }),
      () => agentd.client.run({ init: { agent: "assistant", sessionId: a }, input: textInput("again") }),
    ]) {
      expect((await failure(call)).code).toBe(Code.NotFound);
    }
    const rest = await agentd.client.getSnapshot({ agent: "assistant", sessionId: b });
    expect(rest.snapshot?.status).toBe(SnapshotStatus.COMPLETED);
  });

  it("GetSession returns the head: agent, labels, turn count, head snapshot and its status, times", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "assistant", labels: { kind: "get" } },
      input: textInput("one"),
    });
    await chat.nextTurn();
    chat.sendText("two");
    const second = await chat.nextTurn();
    await chat.finish();
    const { session: info } = await agentd.client.getSession({ sessionId: second.turnEnd.sessionId });
    expect(info).toMatchObject({
      sessionId: second.turnEnd.sessionId,
      agent: "assistant",
      labels: { kind: "get" },
      turnCount: 2,
      headSnapshotId: second.turnEnd.snapshotId,
      headStatus: SnapshotStatus.COMPLETED,
    });
    expect(Number(info!.updatedAt!.seconds)).toBeGreaterThanOrEqual(Number(info!.createdAt!.seconds));
    expect(info!.expiresAt).toBeUndefined();
  });

  it("UpdateSession sets and removes labels and sets and clears a time-to-live", async () => {
    const id = await session({ keep: "yes", drop: "me" });
    const updated = await agentd.client.updateSession({
      sessionId: id,
      setLabels: { added: "1", keep: "still" },
      removeLabels: ["drop"],
      ttl: { seconds: 3600n },
    });
    expect(updated.session?.labels).toEqual({ keep: "still", added: "1" });
    expect(Number(updated.session!.ttl!.seconds)).toBe(3600);
    expect(Number(updated.session!.expiresAt!.seconds) - Number(updated.session!.updatedAt!.seconds)).toBe(3600);
    const cleared = await agentd.client.updateSession({ sessionId: id, clearTtl: true });
    expect(cleared.session?.expiresAt).toBeUndefined();
    expect(
      (await failure(() => agentd.client.updateSession({ sessionId: id, setLabels: { "Bad Key": "x" } }))).code,
    ).toBe(Code.InvalidArgument);
  });

  it("lists newest-updated first, paged, filtered by agent", async () => {
    const run = `page-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await session({ run }, i % 2 === 0 ? "assistant" : "tasks"));
    expect(await listAll({ labels: { run }, pageSize: 2 })).toEqual([...ids].reverse());
    expect(await listAll({ labels: { run }, agent: "tasks" })).toEqual([ids[3], ids[1]]);
    expect((await failure(() => agentd.client.listSessions({ pageSize: -1 }))).code).toBe(Code.InvalidArgument);
    expect((await failure(() => agentd.client.listSessions({ pageToken: "garbage" }))).code).toBe(Code.InvalidArgument);
  });

  it("deleting a session with detached work running aborts the work first; the session is then gone", async () => {
    const chat = new WireChat(agentd.client, {
      init: { agent: "assistant" },
      input: { ...textInput("slow", { echoDelayMs: 300 }), detach: true },
    });
    const { output } = await chat.drain();
    expect(output.finishReason).toBe(FinishReason.DETACHED);
    const statuses: SnapshotStatus[] = [];
    let watchError: ConnectError | undefined;
    let watchOpen!: () => void;
    const opened = new Promise<void>((resolve) => (watchOpen = resolve));
    const watching = (async () => {
      try {
        for await (const res of agentd.client.watchSnapshot({ agent: "assistant", snapshotId: output.snapshotId })) {
          statuses.push(res.status);
          watchOpen();
        }
      } catch (err) {
        watchError = ConnectError.from(err);
      } finally {
        watchOpen();
      }
    })();
    await opened; // the watch has read the row (its first status) before the delete
    expect((await agentd.client.deleteSession({ sessionId: output.sessionId })).deleted).toBe(true);
    await watching;
    // The watch saw the work stop: ABORTED, or the row vanishing (NOT_FOUND), never COMPLETED.
    expect(statuses).not.toContain(SnapshotStatus.COMPLETED);
    expect(statuses.at(-1) === SnapshotStatus.ABORTED || watchError?.code === Code.NotFound).toBe(true);
    expect(
      (await failure(() => agentd.client.getSnapshot({ agent: "assistant", snapshotId: output.snapshotId }))).code,
    ).toBe(Code.NotFound);
    // Once the aborted work has finished (its finalizer ran), the session is still gone: nothing wrote it back.
    await agentd.server.logLine((l) => l.msg === "background work finished" && l.snapshotId === output.snapshotId);
    expect((await failure(() => agentd.client.getSession({ sessionId: output.sessionId }))).code).toBe(Code.NotFound);
  });
});

describe("sessions of another tenant", () => {
  let server: AgentdProcess;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["--auth-tokens", writeTokensFile(["tenant-a-token-000000001 a", "tenant-b-token-000000002 b"])],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("are never listed, and Get/Update/Delete answer NOT_FOUND leaving them intact", async () => {
    const a = clientWithToken(server.baseUrl, "tenant-a-token-000000001");
    const b = clientWithToken(server.baseUrl, "tenant-b-token-000000002");
    const { output } = await a.run({ init: { agent: "assistant", labels: { owner: "a" } }, input: textInput("mine") });
    const id = output!.sessionId;
    expect((await b.listSessions({})).sessions.map((s) => s.sessionId)).not.toContain(id);
    expect((await a.listSessions({})).sessions.map((s) => s.sessionId)).toContain(id);
    expect((await failure(() => b.getSession({ sessionId: id }))).code).toBe(Code.NotFound);
    expect((await failure(() => b.updateSession({ sessionId: id, setLabels: { owner: "b" } }))).code).toBe(
      Code.NotFound,
    );
    expect((await b.deleteSession({ sessionId: id })).deleted).toBe(false);
    expect((await a.getSession({ sessionId: id })).session?.labels).toEqual({ owner: "a" });
  });
});

/** How many rows of the SQLite store `file` (head, records, request IDs, chunk logs) belong to `sessionId`. */
function rowsOf(file: string, sessionId: string): number {
  return ["heads", "records", "requests", "chunk_logs", "chunks"]
    .map((table) => Number(sqliteValue(file, `SELECT count(*) FROM ${table} WHERE session_id = ?`, sessionId)))
    .reduce((a, b) => a + b);
}

describe("--session-ttl", () => {
  let server: AgentdProcess;
  let file: string;
  beforeAll(async () => {
    file = join(mkdtempSync(join(tmpdir(), "agentd-ttl-")), "agentd.db");
    server = await startAgentd({ args: ["--store", `sqlite:${file}`, "--session-ttl", "2s"] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("makes a session NOT_FOUND 2 s after its last turn, and the sweep deletes its rows", async () => {
    const client = agentServiceClient(server.baseUrl, "grpc");
    const lastTurnStarted = Date.now();
    const { output } = await client.run({ init: { agent: "assistant" }, input: textInput("short-lived") });
    const sessionId = output!.sessionId;
    const info = await client.getSession({ sessionId });
    expect(Number(info.session!.ttl!.seconds)).toBe(2);
    expect(rowsOf(file, sessionId)).toBeGreaterThan(0);
    // Expiry is time passing, which no event announces: poll until the session reads NOT_FOUND.
    const readCode = async () => (await failure(() => client.getSession({ sessionId }))).code;
    await until("the session to expire", async () => (await readCode()) === Code.NotFound, { intervalMs: 100 });
    expect(Date.now() - lastTurnStarted).toBeGreaterThanOrEqual(2_000); // not before its TTL
    expect((await failure(() => client.getSnapshot({ agent: "assistant", sessionId }))).code).toBe(Code.NotFound);
    await server.logLine((l) => l.msg === "expired sessions deleted" && Number(l.removed) >= 1, 10_000);
    await until("no row of the session left", () => rowsOf(file, sessionId) === 0, {
      intervalMs: 50,
      timeoutMs: 5_000,
    });
    expect(existsSync(file)).toBe(true);
  });
});
