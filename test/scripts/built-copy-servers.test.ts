// Under `npm test` the suite's servers run from a copy of the fresh build (AGENTD_TEST_DIST, set by
// scripts/test-all.sh): agentdCliArgs (cliArgsFor) picks the copy's CLI, and test/harness/built-copy-imports.mjs
// lets a TypeScript agents module run on Node's own type stripping with its imports of the
// checkout's sources answered by the copy's built files. Without the variable, the sources run
// through tsx.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliArgsFor, nodeBinary, REPO_ROOT } from "../harness/agentd-process.js";

describe("the CLI the harness starts", () => {
  it("is src/cli/main.ts through tsx without a built copy", () => {
    const args = cliArgsFor(undefined);
    expect(args).toEqual(["--import", expect.stringMatching(/\/tsx\/.*\.m?js$/), `${REPO_ROOT}src/cli/main.ts`]);
  });

  it("is the copy's src/cli/main.js with the built-copy import hooks when there is one", () => {
    expect(cliArgsFor("/somewhere/.test-dist")).toEqual([
      "--import",
      `${REPO_ROOT}test/harness/built-copy-imports.mjs`,
      "/somewhere/.test-dist/src/cli/main.js",
    ]);
  });
});

describe("test/harness/built-copy-imports.mjs", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "agentd-built-copy-"));
    // A stand-in copy that has one built file of the sources.
    await mkdir(join(dir, "copy/src/types"), { recursive: true });
    await writeFile(join(dir, "copy/src/types/content.js"), `export const from = "the built copy";\n`);
    await mkdir(join(dir, "module"));
    await writeFile(join(dir, "module/sibling.ts"), `export const sibling: string = "the sibling .ts";\n`);
    await writeFile(
      join(dir, "module/agents.ts"),
      `import { from } from ${JSON.stringify(join(REPO_ROOT, "src/types/content.js"))};\n` +
        `import { from as fromTs } from ${JSON.stringify(join(REPO_ROOT, "src/types/content.ts"))};\n` +
        `import { sibling } from "./sibling.js";\n` +
        `const line: string = [from, fromTs, sibling].join(" | ");\n` +
        `console.log(line);\n`,
    );
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("gives a TypeScript module's imports of src/ the copy's built files and its .js imports of .ts files the .ts", async () => {
    const { stdout } = await promisify(execFile)(
      nodeBinary(),
      ["--import", `${REPO_ROOT}test/harness/built-copy-imports.mjs`, join(dir, "module/agents.ts")],
      { env: { ...process.env, AGENTD_TEST_DIST: join(dir, "copy") } },
    );
    expect(stdout).toBe("the built copy | the built copy | the sibling .ts\n");
  });
});
