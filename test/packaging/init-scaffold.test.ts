/**
 * `agentd init` makes a project that a newcomer installs, serves and tests
 * with the three npm commands it prints (agentd comes from the packed tarball).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";
import { cleanEnv, NODE, npmInstall, packAgentd, run } from "./npm-package.js";

const CLI = join(REPO_ROOT, "bin/agentd.js");

describe("agentd init", { timeout: 240_000 }, () => {
  let work: string;
  let app: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "agentd-init-"));
    const tarball = await packAgentd(work);
    app = join(work, "My App");
    const { stdout } = await run(NODE, [CLI, "init", app, "--agentd-version", `file:${tarball}`], { cwd: work });
    expect(stdout).toContain("npm install");
    await npmInstall(app, []);
  }, 240_000);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("writes a package named after the directory whose scripts serve and test agents.ts", async () => {
    const manifest = JSON.parse(await readFile(join(app, "package.json"), "utf8")) as Record<string, any>;
    expect(manifest.name).toBe("my-app");
    expect(manifest.scripts).toEqual({ start: "exec agentd serve ./agents.ts", test: "vitest run" });
  });

  it("serves the agent with npm start, which stops on SIGTERM", async () => {
    const npm = spawn("npm", ["start", "--", "--port", "0", "--store", "memory:"], {
      cwd: app,
      env: cleanEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const listening = await new Promise<{ url: string; pid: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line:\n${out}`)), 60_000);
      npm.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const line = out.split("\n").find((l) => l.includes('"msg":"agentd listening"'));
        if (line) {
          clearTimeout(timer);
          resolve(JSON.parse(line) as { url: string; pid: number });
        }
      });
      npm.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    });
    try {
      const res = await fetch(`${listening.url}/agentd.v1.AgentService/Run`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          init: { agent: "notes" },
          input: { message: { role: "ROLE_USER", content: [{ text: "hello" }] } },
        }),
      });
      expect(await res.json()).toMatchObject({ output: { message: { content: [{ text: "echo: hello" }] } } });
    } finally {
      const exited = once(npm, "exit");
      npm.kill("SIGTERM");
      await exited;
    }
  });

  it("passes its own npm test, which calls the agent over gRPC", async () => {
    const { stdout } = await run("npm", ["test"], { cwd: app, timeoutMs: 120_000 });
    expect(stdout).toMatch(/1 passed/);
  });

  it("refuses a directory that already has one of its files, writing nothing", async () => {
    const taken = join(work, "taken");
    await mkdir(taken);
    await writeFile(join(taken, "agents.ts"), "// mine\n");
    const failed = await run(NODE, [CLI, "init", taken], { cwd: work }).catch((err: Error) => err);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toContain(`${taken} already has agents.ts; nothing was written`);
    expect(await readdir(taken)).toEqual(["agents.ts"]);
    expect(await readFile(join(taken, "agents.ts"), "utf8")).toBe("// mine\n");
  });
});
