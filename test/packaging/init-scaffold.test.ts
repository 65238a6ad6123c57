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
  let tarball: string;
  let initOutput: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "agentd-init-"));
    tarball = await packAgentd(work);
    // As a user tries an unpublished build: install the tarball, then run its `agentd init` with no flags.
    const tools = join(work, "tools");
    await mkdir(tools);
    await writeFile(join(tools, "package.json"), JSON.stringify({ name: "tools", version: "1.0.0", private: true }));
    await npmInstall(tools, [tarball]);
    app = join(work, "My App");
    initOutput = (
      await run(NODE, [join(tools, "node_modules/@agentd-dev/agentd/bin/agentd.js"), "init", app], {
        cwd: work,
        env: cleanEnv(),
      })
    ).stdout;
    await npmInstall(app, []);
  }, 240_000);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("depends on the tarball it was installed from, and prints next commands that work", async () => {
    const manifest = JSON.parse(await readFile(join(app, "package.json"), "utf8")) as Record<string, any>;
    expect(manifest.dependencies["@agentd-dev/agentd"]).toBe(`file:${tarball}`);
    expect(initOutput).toContain(`it depends on @agentd-dev/agentd file:${tarball} (from the tarball ${tarball})`);
    expect(initOutput).toContain(`cd ${JSON.stringify(app)}\n  npm install\n  npm start`);
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
