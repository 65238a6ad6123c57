// `agentd copy-store <from> <to>` as a user runs it (a real CLI process): 1,000 sessions of a file
// store (retired: copy-store reads it, nothing serves or writes it; the fixture was written by the
// file store itself) into SQLite and into PostgreSQL (a real server) with every chain intact, a
// file store with crash leftovers into MongoDB (mongo-java-server), a copy killed midway and run again, a destination
// that holds something else, a file: destination refused, and the `.agentd` file store of an
// earlier release, moved by the documented command and served again. The copies are compared with
// the same 1,000 sessions written through the store API into a memory store (`populate` is
// deterministic), so the reader of the file store is checked against what was written, not
// against itself.
import { spawn } from "node:child_process";
import { Code } from "@connectrpc/connect";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { copyStore } from "../../stores/copy/copy-store.js";
import { digestOf, readSessionContent } from "../../stores/copy/session-content.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { edgeExpected, extractFileStore } from "../harness/file-store-fixtures.js";
import type { SessionStore } from "../../stores/snapshot-store.js";
import { agentdCliArgs, REPO_ROOT, startAgentd } from "../harness/agentd-process.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { expectSameSessions, populate, type Populated } from "../stores/copy-fixtures.js";
import { useTempDirs } from "../stores/os-fixtures.js";
import { freshPrefix, useMongoServer } from "../stores/mongodb-fixtures.js";
import { openSqlStore } from "../../stores/sql/sql-store-uri.js";
import { freshSchema, postgresForTests } from "../harness/postgres-server.js";

const tempDir = useTempDirs("agentd-copy-store-cli-");
const mongo = useMongoServer("agentd_copy_store");
const SESSIONS = 1000;

/** A running `agentd copy-store` process. */
interface CopyRun {
  /** stdout lines so far. */
  lines: string[];
  stderr(): string;
  exited: Promise<number | null>;
  kill(): void;
}

function copyStoreCli(args: string[], cwd = REPO_ROOT): CopyRun {
  const proc = spawn(`${REPO_ROOT}node_modules/.bin/node`, [...agentdCliArgs(), "copy-store", ...args], {
    cwd,
    env: { ...process.env, NODE_OPTIONS: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let pending = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => {
    pending += d.toString();
    const parts = pending.split("\n");
    pending = parts.pop()!;
    lines.push(...parts);
  });
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on("close", (code) => resolve(code)));
  return { lines, stderr: () => stderr, exited, kill: () => proc.kill("SIGKILL") };
}

/** The per-session lines of a run: outcome, session ID, record count, checksum. */
function sessionLines(lines: string[]): { outcome: string; sessionId: string; records: number; checksum: string }[] {
  return lines.flatMap((line) => {
    const m = /^(copied|completed|unchanged)\s+(\S+)\s+records=(\d+)\s+sha256=([0-9a-f]{64})$/.exec(line);
    return m ? [{ outcome: m[1]!, sessionId: m[2]!, records: Number(m[3]), checksum: m[4]! }] : [];
  });
}

/** Every session's record count and checksum as the store holds it (computed here, not by the CLI). */
async function digests(
  store: SessionStore,
  sessionIds: string[],
): Promise<Map<string, { records: number; checksum: string }>> {
  const out = new Map<string, { records: number; checksum: string }>();
  for (const id of sessionIds) out.set(id, digestOf(await readSessionContent(store, (await store.getHead(id))!)));
  return out;
}

describe("agentd copy-store", () => {
  let sourceDir = "";
  /** The same sessions as the file store's, written through the store API. */
  let source: InMemorySessionStore;
  let populated: Populated;
  let expected: Map<string, { records: number; checksum: string }>;

  beforeAll(async () => {
    // Its own directory: useTempDirs removes its directories after each test, this one serves them all.
    sourceDir = await mkdtemp(join(tmpdir(), "agentd-copy-store-source-"));
    extractFileStore("populated-1000", sourceDir);
    source = new InMemorySessionStore();
    populated = await populate(source, SESSIONS);
    expected = await digests(source, populated.sessionIds);
    return async () => {
      await rm(sourceDir, { recursive: true, force: true });
    };
  }, 300_000);

  /** Checks a finished run's output against the source: one verified line per session with its own checksum. */
  function expectVerifiedOutput(run: CopyRun, outcomes: string[]): void {
    const lines = sessionLines(run.lines);
    expect(new Set(lines.map((l) => l.outcome))).toEqual(new Set(outcomes));
    expect(lines.map((l) => l.sessionId).sort()).toEqual(populated.sessionIds);
    for (const line of lines)
      expect({ records: line.records, checksum: line.checksum }).toEqual(expected.get(line.sessionId));
    expect(run.lines.at(-1)).toMatch(
      new RegExp(
        `^agentd: ${SESSIONS} sessions \\(.*, 0 failed\\), ${populated.records} records verified .*; ${populated.webhookEvents.length} webhook events \\(${populated.webhookEvents.length} pending, \\d+ written\\); every session verified$`,
      ),
    );
  }

  it("moves a file store with crash leftovers into MongoDB, which is a source too; a second run writes nothing", async () => {
    // The 1,000 sessions go into SQLite and PostgreSQL below; MongoDB gets the edge store (a dead
    // writer's journaled turn, a torn batch, a tenant directory, webhook events of every state).
    const edge = await tempDir();
    extractFileStore("edge", edge);
    const expectedEdge = edgeExpected();
    const prefix = freshPrefix();
    const uri = `mongodb://127.0.0.1:${mongo.server.port}/agentd_copy_store?directConnection=true&collectionPrefix=${prefix}`;
    const run = copyStoreCli([`file:${edge}`, uri]);
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.lines.at(-1)).toMatch(/ 5 sessions \(5 copied.* 0 failed\), 11 records verified .*; 3 webhook events/);
    const copied = mongo.storeOn(prefix);
    const expectContent = async (store: SessionStore): Promise<void> => {
      for (const { head, records } of expectedEdge.sessions) {
        const { version: _v, ...fields } = head;
        expect(await store.getHead(head.sessionId), head.sessionId).toMatchObject(fields);
        const content = await readSessionContent(store, (await store.getHead(head.sessionId))!);
        expect(content.records, head.sessionId).toEqual([...records].reverse());
      }
    };
    await expectContent(copied);
    expect((await copied.webhookOutbox().list({ tenant: "", pageSize: 100 })).events).toEqual(expectedEdge.webhooks);
    // …and MongoDB is a source too (scanHeads pages through its heads collection).
    const back = new InMemorySessionStore();
    expect(await copyStore(copied, back)).toMatchObject({ sessions: 5, failures: [] });
    await expectContent(back);

    const again = copyStoreCli([`file:${edge}`, uri]);
    expect(await again.exited, again.stderr()).toBe(0);
    expect(new Set(sessionLines(again.lines).map((l) => l.outcome))).toEqual(new Set(["unchanged"]));
    expect(again.lines.at(-1)).toContain(`records verified (0 written)`);
  }, 600_000);

  it("moves it into SQLite with every chain intact; a second run writes nothing", async () => {
    const dest = join(await tempDir(), "agentd.db");
    const run = copyStoreCli([`file:${sourceDir}`, `sqlite:${dest}`]);
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stderr()).toBe("");
    expectVerifiedOutput(run, ["copied"]);
    const copy = await openSqlStore(`sqlite:${dest}`);
    try {
      expect(await expectSameSessions(source, copy, populated)).toBeGreaterThan(3 * SESSIONS);
      // …and SQLite is a source too.
      const back = new InMemorySessionStore();
      expect(await copyStore(copy, back, { concurrency: 8 })).toMatchObject({ sessions: SESSIONS, failures: [] });
      await expectSameSessions(source, back, populated);
    } finally {
      await copy.close();
    }
    const again = copyStoreCli([`file:${sourceDir}`, `sqlite:${dest}`]);
    expect(await again.exited, again.stderr()).toBe(0);
    expectVerifiedOutput(again, ["unchanged"]);
    expect(again.lines.at(-1)).toContain(`records verified (0 written)`);
  }, 600_000);

  it("moves it into PostgreSQL (a real server) with every chain intact", async () => {
    const { server, release } = await postgresForTests();
    const uri = server.uri(freshSchema("copy"));
    try {
      const run = copyStoreCli([`file:${sourceDir}`, uri]);
      expect(await run.exited, run.stderr()).toBe(0);
      expect(run.stderr()).toBe("");
      expectVerifiedOutput(run, ["copied"]);
      const copy = await openSqlStore(uri);
      try {
        expect(await expectSameSessions(source, copy, populated)).toBeGreaterThan(3 * SESSIONS);
      } finally {
        await copy.close();
      }
    } finally {
      await release();
    }
  }, 600_000);

  it("a copy killed midway finishes when run again: no duplicates, every session verified", async () => {
    const dest = `sqlite:${join(await tempDir(), "agentd.db")}`;
    const first = copyStoreCli([`file:${sourceDir}`, dest]);
    const deadline = Date.now() + 300_000;
    while (sessionLines(first.lines).length < 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    first.kill();
    await first.exited;
    const before = sessionLines(first.lines).length;
    expect(before).toBeGreaterThanOrEqual(200);
    expect(before).toBeLessThan(SESSIONS);

    const second = copyStoreCli([`file:${sourceDir}`, dest]);
    expect(await second.exited, second.stderr()).toBe(0);
    const lines = sessionLines(second.lines);
    expect(lines.filter((l) => l.outcome === "unchanged").length).toBeGreaterThanOrEqual(before);
    expect(lines.filter((l) => l.outcome === "copied").length).toBeGreaterThan(0);
    for (const line of lines)
      expect({ records: line.records, checksum: line.checksum }).toEqual(expected.get(line.sessionId));
    const copy = await openSqlStore(dest);
    try {
      // Same record IDs in the same order per session: nothing written twice.
      await expectSameSessions(source, copy, populated);
    } finally {
      await copy.close();
    }
  }, 600_000);

  it("exits 1 naming the session when the destination holds another owner's session of that ID; 2 for usage errors", async () => {
    const small = await tempDir();
    extractFileStore("edge", small);
    const dest = `sqlite:${join(await tempDir(), "agentd.db")}`;
    const taken = await openSqlStore(dest);
    await taken.commit({
      expectedVersion: 0,
      head: {
        sessionId: "e4",
        agent: "assistant",
        owner: "other-tenant",
        headSnapshotId: "x",
        turnCount: 0,
        createdAt: 1,
        updatedAt: 1,
      },
    });
    await taken.close();
    const run = copyStoreCli([`file:${small}`, dest]);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toMatch(
      /^agentd: copy-store: FAILED_PRECONDITION: session e4: the destination holds a session of this ID for another agent or owner/,
    );
    expect(
      sessionLines(run.lines)
        .map((l) => l.sessionId)
        .sort(),
    ).toEqual(["e1", "e3", "e5", "e6"]);
    expect(run.lines.at(-1)).toMatch(/1 failed.*NOT complete/);

    const missing = copyStoreCli([`file:${small}/nothing-here`, `sqlite:${join(await tempDir(), "agentd.db")}`]);
    expect(await missing.exited).toBe(2);
    expect(missing.stderr()).toMatch(/holds no agentd file store/);
    const one = copyStoreCli([`file:${small}`]);
    expect(await one.exited).toBe(2);
    expect(one.stderr()).toMatch(
      /^agentd: copy-store takes a source and a destination store URI\nUsage: agentd copy-store/,
    );
    const same = copyStoreCli([dest, ` ${dest}`]);
    expect(await same.exited).toBe(2);
    expect(same.stderr()).toMatch(/the same store/);
    // The file store is retired: a source only, never a destination.
    const toFile = copyStoreCli([`file:${small}`, `file:${small}-copy`]);
    expect(await toFile.exited).toBe(2);
    expect(toFile.stderr()).toBe(
      `agentd: copy-store: the destination file:${small}-copy: the file store is retired; copy the sessions into SQLite ` +
        `with "agentd copy-store file:${small} sqlite:${small}-copy/agentd.db", then serve --store sqlite:${small}-copy/agentd.db\n`,
    );
  }, 120_000);

  it("moves the .agentd file store of an earlier release (the documented command); a server on the default store continues the sessions", async () => {
    const cwd = await tempDir();
    // The file store an earlier release served from ./.agentd, as that release wrote it.
    extractFileStore("edge", join(cwd, ".agentd"));
    const expectedEdge = edgeExpected();

    const refused = await startAgentd({ cwd, args: ["--store", "file:./.agentd"] }).then(
      async (p) => `started: ${await p.stop()}`,
      (err: Error) => err.message,
    );
    expect(refused).toContain("agentd exited with code 2 before listening");
    expect(refused).toContain('"agentd copy-store file:./.agentd sqlite:./.agentd/agentd.db"');

    const run = copyStoreCli(["file:./.agentd", "sqlite:./.agentd/agentd.db"], cwd);
    expect(await run.exited, run.stderr()).toBe(0);
    expect(
      sessionLines(run.lines)
        .map((l) => l.sessionId)
        .sort(),
    ).toEqual(expectedEdge.sessions.map((s) => s.head.sessionId).sort());

    const second = await startAgentd({ cwd, store: "cli-default" });
    try {
      const moved = agentServiceClient(second.baseUrl, "grpc");
      for (const { head, records } of expectedEdge.sessions) {
        // acme's session is not the anonymous caller's; e1's TTL ran out long ago (in either store).
        if (head.owner !== "" || (head.expiresAt ?? Infinity) <= Date.now()) continue;
        const after = await moved.listSnapshots({ agent: "assistant", sessionId: head.sessionId });
        expect(
          after.snapshots.map((s) => s.snapshotId),
          head.sessionId,
        ).toEqual(records.map((r) => r.snapshotId));
      }
      await expect(moved.getSession({ sessionId: "e1" })).rejects.toMatchObject({ code: Code.NotFound });
      // e4's last turn was only in the journal of the process that died writing it: the next turn follows it.
      const next = await moved.run({ init: { agent: "assistant", sessionId: "e4" }, input: textInput("three") });
      const { snapshot } = await moved.getSnapshot({ agent: "assistant", snapshotId: next.output!.snapshotId });
      expect(snapshot?.parentId).toBe("e4-r2");
      expect(
        snapshot?.state?.messages.map((m) => (m.content[0]?.kind.case === "text" ? m.content[0].kind.value : "")),
      ).toEqual(["turn 2 of e4", "three", "echo: three"]);
    } finally {
      await second.stop();
    }
  }, 300_000);
});
