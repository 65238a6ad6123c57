// `agentd serve`: the example agents are opt-in once the user serves their own agents; a
// duplicate agent name names both sources; `npm start --port N` explains the missing `--`.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseCommandLine, UsageError } from "../../src/cli/args.js";
import { REPO_ROOT, startAgentd } from "../harness/agentd-process.js";
import { agentServiceClient } from "../harness/wire-clients.js";

function serveConfig(argv: string[]) {
  const command = parseCommandLine(["serve", ...argv], {});
  if (command.kind !== "serve") throw new Error("not serve");
  return command.config;
}

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A user's agents module defining an agent called `assistant` (like the example's). */
function userModule(): string {
  mkdirSync(join(REPO_ROOT, ".cache"), { recursive: true });
  const dir = mkdtempSync(join(REPO_ROOT, ".cache", "cli-examples-"));
  dirs.push(dir);
  const file = join(dir, "my-agents.ts");
  writeFileSync(
    file,
    [
      `import { defineCustomAgent, generateModelTurn } from ${JSON.stringify(join(REPO_ROOT, "src/index.ts"))};`,
      `export const assistant = defineCustomAgent({ name: "assistant", turn: (_input, ctx) => generateModelTurn(ctx, "echo") });`,
      "",
    ].join("\n"),
  );
  return file;
}

describe("which agents agentd serve registers", () => {
  it("serves the examples by default only without agents modules and --prompts; --examples / --no-examples decide otherwise", () => {
    expect(serveConfig([]).examples).toBe(true);
    expect(serveConfig(["./my-agents.ts"]).examples).toBe(false);
    expect(serveConfig(["--prompts", "./prompts"]).examples).toBe(false);
    expect(serveConfig(["./my-agents.ts", "--examples"]).examples).toBe(true);
    expect(serveConfig(["--no-examples"]).examples).toBe(false);
    expect(() => serveConfig(["--examples", "--no-examples"])).toThrow(/contradict/);
  });

  it("a user module may define its own `assistant`: served alone, without the examples", async () => {
    const agentd = await startAgentd({ args: [userModule()], examples: "cli-default" });
    try {
      expect(agentd.listening.agents).toEqual(["assistant"]);
      const { agents } = await agentServiceClient(agentd.baseUrl, "grpc").listAgents({});
      expect(agents.map((a) => [a.name, a.description])).toEqual([["assistant", ""]]);
    } finally {
      await agentd.stop();
    }
  });

  it("with --examples, a duplicate name stops the start with a message naming both sources", async () => {
    const file = userModule();
    const err = await startAgentd({ args: [file, "--examples"], examples: "cli-default" }).then(
      async (started) => {
        await started.stop();
        throw new Error("agentd started with a duplicate agent name");
      },
      (e: Error) => e,
    );
    expect(err.message).toContain("exited with code 2");
    expect(err.message).toContain(
      `agentd: agent "assistant" is defined twice: by the example agents (--no-examples leaves them out) and by agents module "${file}"`,
    );
  });
});

describe("a port given to npm instead of agentd", () => {
  it("parseCommandLine rejects a numeric agents module, pointing at `npm start -- --port N`", () => {
    expect(() => serveConfig(["51005"])).toThrow(UsageError);
    expect(() => serveConfig(["51005"])).toThrow(
      '"51005" is not an agents module; to set the port through npm put the flags after "--": npm start -- --port 51005',
    );
  });

  it("`npm start --port 51005` exits 2 with that message (npm keeps --port and passes 51005 on)", async () => {
    const child = spawn("npm", ["start", "--port", "51005"], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout!.resume();
    const [code] = await once(child, "exit");
    expect(code).not.toBe(0);
    expect(stderr).toContain("npm start -- --port 51005");
  });
});
