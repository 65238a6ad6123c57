import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { nodeVersionProblem } from "../../bin/node-version-check.js";
import { REPO_ROOT } from "../harness/agentd-process.js";

/** The documented minimum (README "Two commands"), not the code's constant. */
const DOCUMENTED_MINIMUM = "22.15";

describe("the Node.js version agentd runs on", () => {
  it.each(["20.20.2", "18.19.0", "22.14.0", "21.7.3"])("refuses %s in one line naming the minimum", (version) => {
    expect(nodeVersionProblem(version)).toBe(
      `agentd needs Node.js ${DOCUMENTED_MINIMUM} or newer and this is ${version}: install Node.js 22 (22.15+) or 24`,
    );
  });

  it.each(["22.15.0", "22.20.1", "24.9.0", "25.0.0"])("accepts %s", (version) => {
    expect(nodeVersionProblem(version)).toBeUndefined();
  });

  it("package.json's engines field says the same minimum, and so does the README", async () => {
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, "package.json"), "utf8")) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${DOCUMENTED_MINIMUM}`);
    expect(await readFile(join(REPO_ROOT, "README.md"), "utf8")).toContain(`Node.js ${DOCUMENTED_MINIMUM} or newer`);
  });

  it("the agentd command on an older Node.js exits 2 with that one line before loading anything", async () => {
    const dir = await mkdtemp(join(tmpdir(), "agentd-node-version-"));
    const preload = join(dir, "node-20.mjs");
    await writeFile(preload, 'Object.defineProperty(process.versions, "node", { value: "20.20.2" });\n');
    const run = promisify(execFile)(
      `${REPO_ROOT}node_modules/.bin/node`,
      ["--import", preload, `${REPO_ROOT}bin/agentd.js`, "serve"],
      {
        timeout: 30_000,
      },
    );
    const failure = (await run.then(
      () => undefined,
      (err: unknown) => err,
    )) as { code: number; stderr: string; stdout: string };
    expect(failure.code).toBe(2);
    expect(failure.stderr).toBe(
      "agentd: agentd needs Node.js 22.15 or newer and this is 20.20.2: install Node.js 22 (22.15+) or 24\n",
    );
    expect(failure.stdout).toBe("");
  });
});
