import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Server } from "node:net";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { agentdCliArgs, REPO_ROOT, startAgentd } from "../harness/agentd-process.js";
import { sessionWrittenAt, untilQueued } from "../harness/busy-session.js";
import type { RunStreamResponse } from "../../gen/ts/agentd/v1/agent_service_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { agentServiceClient } from "../harness/wire-clients.js";
import { GRPCURL } from "./test-server.js";

const NODE = `${REPO_ROOT}node_modules/.bin/node`;

/** Runs the CLI to completion (for commands that exit on their own). */
async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(NODE, [...agentdCliArgs(), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("agentd serve (a real process)", () => {
  it("logs one listening line with host, port, url, store and the example agents", async () => {
    const agentd = await startAgentd();
    try {
      expect(agentd.listening).toMatchObject({
        host: "127.0.0.1",
        url: `http://127.0.0.1:${agentd.port}`,
        store: "memory:",
        agents: ["assistant", "tasks"],
      });
      expect(agentd.port).toBeGreaterThan(0);
    } finally {
      await agentd.stop();
    }
  });

  it("answers grpcurl list and a Connect call over HTTP/1.1 on the same port", async () => {
    const agentd = await startAgentd();
    try {
      const { stdout } = await promisify(execFile)(GRPCURL, ["-plaintext", agentd.target, "list"]);
      expect(stdout).toContain("agentd.v1.AgentService");
      const res = await fetch(`${agentd.baseUrl}/agentd.v1.AgentService/ListAgents`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      const body = (await res.json()) as { agents: { name: string }[] };
      expect(body.agents.map((a) => a.name)).toEqual(["assistant", "tasks"]);
    } finally {
      await agentd.stop();
    }
  });

  it("serves the agents a TypeScript module exports next to the examples", async () => {
    const agentd = await startAgentd({ args: ["test/fixtures/agents.ts"] });
    try {
      expect(agentd.listening.agents).toEqual(
        expect.arrayContaining(["assistant", "tasks", "notes", "flaky", "redacted"]),
      );
    } finally {
      await agentd.stop();
    }
  });

  it("exits 0 after SIGTERM", async () => {
    const agentd = await startAgentd();
    expect(await agentd.stop("SIGTERM")).toBe(0);
    expect(agentd.logLines().some((l) => l.msg === "agentd stopped")).toBe(true);
  });

  it("exits 0 after SIGINT", async () => {
    const agentd = await startAgentd();
    expect(await agentd.stop("SIGINT")).toBe(0);
  });

  it("takes its port from PORT when --port is not given", async () => {
    const blocker = await listenOnFreePort();
    const busy = (blocker.address() as { port: number }).port;
    try {
      const result = await runCli(["serve", "--store", "memory:"], { PORT: String(busy) });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`port ${busy} on 127.0.0.1 is already in use`);
    } finally {
      blocker.close();
    }
  });

  it("exits 2 with one line on stderr for an unknown flag", async () => {
    const result = await runCli(["serve", "--bogus"]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("--bogus");
  });

  it("exits 2 naming the module when an agents module does not exist", async () => {
    const result = await runCli(["serve", "./no-such-agents.ts", "--port", "0", "--store", "memory:"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/agents module "\.\/no-such-agents\.ts" not found/);
  });

  it("exits 2 when the port is already in use", async () => {
    const blocker = await listenOnFreePort();
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await runCli(["serve", "--port", String(port), "--store", "memory:"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("already in use");
    } finally {
      blocker.close();
    }
  });

  it("exits 2 for an unknown store URI", async () => {
    const result = await runCli(["serve", "--port", "0", "--store", "redis://x"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown store URI "redis://x"');
  });

  it("exits 2 for --store file:<dir>, naming the copy-store command that moves it to SQLite", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-retired-file-store-"));
    const result = await runCli(["serve", "--port", "0", "--store", ` file:${dir} `]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain(`--store file:${dir}: the file store is retired`);
    expect(result.stderr).toContain(`"agentd copy-store file:${dir} sqlite:${dir}/agentd.db"`);
    expect(result.stderr).toContain(`then serve --store sqlite:${dir}/agentd.db`);
    expect(existsSync(join(dir, "agentd-store.json"))).toBe(false);
  });

  it("agentd copy-store exits 2 for a file: destination, naming the copy into SQLite instead", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-retired-file-store-"));
    const result = await runCli(["copy-store", "memory:", `file:${dir}/moved`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `agentd: copy-store: the destination file:${dir}/moved: the file store is retired; copy the sessions into SQLite ` +
        `with "agentd copy-store memory: sqlite:${dir}/moved/agentd.db", then serve --store sqlite:${dir}/moved/agentd.db\n`,
    );
    expect(existsSync(join(dir, "moved"))).toBe(false);
  });

  it("copy-store's refusal of a file: destination hides the source's password", async () => {
    const result = await runCli(["copy-store", "postgres://app:hunter2-pw@127.0.0.1:1/agentd", "file:/tmp/x"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("the file store is retired");
    expect(result.stderr).not.toContain("hunter2-pw");
  });

  it("exits 2 with the usage hint for a file:// URI that is not a URL", async () => {
    const result = await runCli(["serve", "--port", "0", "--store", "file://%zz"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("the file store is retired");
  });

  it("exits 2 for an unknown --busy-policy", async () => {
    const result = await runCli(["serve", "--port", "0", "--store", "memory:", "--busy-policy", "wait"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--busy-policy must be reject, enqueue or interrupt, got "wait"');
  });

  it("--busy-policy enqueue makes a call that sets no policy wait for a busy session", async () => {
    const server = await startAgentd({ args: ["--store", "memory:", "--busy-policy", "enqueue"] });
    try {
      const client = agentServiceClient(server.baseUrl, "grpc");
      const chat = new WireChat(client, { init: { agent: "assistant" }, input: textInput("held") });
      const sessionId = (await chat.nextTurn()).turnEnd.sessionId;
      const writtenAt = await sessionWrittenAt(client, sessionId);
      const queued = client.run({ init: { agent: "assistant", sessionId }, input: textInput("waited") });
      await untilQueued(client, sessionId, writtenAt); // waiting, not refused: the flag's policy applies
      await chat.finish();
      expect((await queued).output?.message?.content[0]?.kind.value).toBe("echo: waited");
    } finally {
      await server.stop();
    }
  });

  it("--max-session-bytes caps a session: the turn past it fails in-band with RESOURCE_EXHAUSTED", async () => {
    const server = await startAgentd({ args: ["--store", "memory:", "--max-session-bytes", "4096"] });
    try {
      const client = agentServiceClient(server.baseUrl, "grpc");
      const first = await client.run({ init: { agent: "assistant" }, input: textInput("small") });
      const { output } = await client.run({
        init: { agent: "assistant", sessionId: first.output!.sessionId },
        input: textInput("y".repeat(5000)),
      });
      expect(output?.error?.status).toBe("RESOURCE_EXHAUSTED");
      expect(output?.snapshotId).toBe(first.output!.snapshotId);
    } finally {
      await server.stop();
    }
  });

  it("prints usage for --help and exits 0", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Usage: agentd serve");
  });

  it("runs through bin/agentd.js", async () => {
    const { stdout } = await promisify(execFile)(NODE, ["bin/agentd.js", "--version"], { cwd: REPO_ROOT });
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("serves a TypeScript agents module with import syntax from a CommonJS project through bin/agentd.js", async () => {
    const project = await mkdtemp(join(tmpdir(), "agentd-cjs-project-"));
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "user-project", type: "commonjs" }));
    await writeFile(
      join(project, "my-agents.ts"),
      [
        `import { defineCustomAgent, generateModelTurn } from ${JSON.stringify(`${REPO_ROOT}src/index.ts`)};`,
        `export const shopper = defineCustomAgent({ name: "shopper", turn: (_input, ctx) => generateModelTurn(ctx, "echo") });`,
      ].join("\n"),
    );
    const child = spawn(
      NODE,
      [`${REPO_ROOT}bin/agentd.js`, "serve", "./my-agents.ts", "--port", "0", "--store", "memory:"],
      { cwd: project },
    );
    try {
      const listening = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const line = out.split("\n").find((l) => l.includes('"msg":"agentd listening"'));
          if (line) resolve(line);
        });
        child.stderr.on("data", (d: Buffer) => (out += d.toString()));
        child.once("exit", (code) => reject(new Error(`agentd exited ${code}: ${out}`)));
      });
      expect(JSON.parse(listening).agents).toContain("shopper");
    } finally {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  });
});

function listenOnFreePort(): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

describe("agentd serve shutdown with a turn in flight", () => {
  it("finishes the running turn before exiting 0 on SIGTERM", async () => {
    const agentd = await startAgentd({ args: ["--echo-delay-ms", "100"] });
    const stream = agentServiceClient(agentd.baseUrl, "grpc")
      .runStream({ init: { agent: "assistant" }, input: textInput("one two three four") })
      [Symbol.asyncIterator]();
    const first = await stream.next(); // the turn is running: it streamed its first word
    const exitCode = agentd.stop("SIGTERM");
    const responses: RunStreamResponse[] = first.done ? [] : [first.value];
    for (let next = await stream.next(); !next.done; next = await stream.next()) responses.push(next.value);
    const output = responses.at(-1)?.output;
    expect(output?.finishReason).toBe(FinishReason.STOP);
    expect(output?.message?.content.map((p) => p.kind.value).join("")).toBe("echo: one two three four");
    expect(await exitCode).toBe(0);
    expect(agentd.logLines().find((l) => l.msg === "agentd draining")?.inFlight).toBe(1);
  });
});
