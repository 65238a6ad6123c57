import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runAgentdBin, startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { extractFileStore } from "../harness/file-store-fixtures.js";
import { textInput } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";

const running: AgentdProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function serve(cwd: string): Promise<AgentdProcess> {
  const p = await startAgentd({ cwd, store: "cli-default", viaBin: true });
  running.push(p);
  return p;
}

/** What the stock `sqlite3` shell prints for `sql` on `file` (node:sqlite when the shell is not installed). */
async function sqlite3(file: string, sql: string): Promise<string> {
  const shell = spawnSync("sqlite3", [file, sql], { encoding: "utf8" });
  if (!shell.error) {
    expect(shell.stderr).toBe("");
    return shell.stdout.trim();
  }
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db
      .prepare(sql)
      .all()
      .map((row) => Object.values(row).join("|"))
      .join("\n");
  } finally {
    db.close();
  }
}

// Each test starts agentd two or three times through bin/agentd.js (tsx transpiles the sources at
// each start); beside other files on a loaded machine one start can take half a minute. A safety
// net, not an expectation: a passing test ends at its events.
describe("the default store", { timeout: 300_000 }, () => {
  it("keeps sessions in ./.agentd/agentd.db, which the sqlite3 shell reads, and resumes them after a restart", async () => {
    const cwd = await mkdtemp(join(tmpdir(), "agentd-default-store-"));
    dirs.push(cwd);
    const first = await serve(cwd);
    expect(first.listening.store).toBe("sqlite:./.agentd/agentd.db");
    const client = agentServiceClient(first.baseUrl, "grpc");
    const one = await client.run({ init: { agent: "assistant" }, input: textInput("first turn") });
    const sessionId = one.output!.sessionId;
    const two = await client.run({ init: { agent: "assistant", sessionId }, input: textInput("second turn") });
    expect(await first.stop("SIGTERM")).toBe(0);
    expect(first.logs()).not.toContain("ExperimentalWarning");
    running.splice(running.indexOf(first), 1);

    const file = join(cwd, ".agentd", "agentd.db");
    expect(existsSync(file)).toBe(true);
    expect(
      await sqlite3(
        file,
        `SELECT turn_index, status FROM records WHERE session_id = '${sessionId}' ORDER BY turn_index`,
      ),
    ).toBe("0|completed\n1|completed");
    expect(
      await sqlite3(file, `SELECT json_extract(head, '$.headSnapshotId') FROM heads WHERE session_id = '${sessionId}'`),
    ).toBe(two.output!.snapshotId);

    const second = await serve(cwd);
    const again = agentServiceClient(second.baseUrl, "grpc");
    const three = await again.run({ init: { agent: "assistant", sessionId }, input: textInput("third turn") });
    const { snapshot } = await again.getSnapshot({ agent: "assistant", sessionId });
    expect(snapshot?.snapshotId).toBe(three.output!.snapshotId);
    expect(snapshot?.parentId).toBe(two.output!.snapshotId);
    expect(
      snapshot?.state?.messages.map((m) => (m.content[0]?.kind.case === "text" ? m.content[0].kind.value : "")),
    ).toEqual(["first turn", "echo: first turn", "second turn", "echo: second turn", "third turn", "echo: third turn"]);
  });

  it("warns at start when ./.agentd still holds a file store of an earlier release, which --store file: refuses and copy-store moves", async () => {
    const cwd = await mkdtemp(join(tmpdir(), "agentd-default-store-"));
    dirs.push(cwd);
    // The file store an earlier release served from ./.agentd, as it wrote it (one session's last
    // turn is still only in the journal of the process that died writing it).
    extractFileStore("edge", join(cwd, ".agentd"));

    const now = await serve(cwd);
    const warning = now.logLines().find((line) => String(line.msg).includes("file store of an earlier agentd"));
    expect(warning).toMatchObject({
      level: 40,
      legacyStore: "file:./.agentd",
      msg: expect.stringContaining("agentd copy-store file:./.agentd sqlite:./.agentd/agentd.db"),
    });
    expect(warning?.msg).not.toContain("serve it as before");
    await now.stop();
    running.splice(running.indexOf(now), 1);

    // Serving the file store is refused, naming the command that moves it.
    const refused = await runAgentdBin(["serve", "--port", "0", "--store", "file:./.agentd"], { cwd });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      '--store file:./.agentd: the file store is retired; copy its sessions into SQLite with "agentd copy-store file:./.agentd sqlite:./.agentd/agentd.db"',
    );

    // That command, then the default store serves the session.
    const copied = await runAgentdBin(["copy-store", "file:./.agentd", "sqlite:./.agentd/agentd.db"], { cwd });
    expect(copied.code, copied.stderr).toBe(0);
    const after = await serve(cwd);
    const client = agentServiceClient(after.baseUrl, "grpc");
    expect((await client.getSession({ sessionId: "e5" })).session?.sessionId).toBe("e5");
    const { snapshot } = await client.getSnapshot({ agent: "assistant", sessionId: "e4" });
    expect(snapshot?.snapshotId).toBe("e4-r2");
    expect(snapshot?.turnIndex).toBe(2);
  });

  it("stays quiet on the default store when ./.agentd holds no file store", async () => {
    const cwd = await mkdtemp(join(tmpdir(), "agentd-default-store-"));
    dirs.push(cwd);
    const p = await serve(cwd);
    expect(p.logLines().some((line) => String(line.msg).includes("earlier agentd"))).toBe(false);
  });
});
