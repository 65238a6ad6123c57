// `npm test` (scripts/test-all.sh on scripts/run-steps.sh) runs every step even when one before
// it failed, prints the output of its background steps whole and in order, ends with a summary
// table (step, result, seconds) and exits 1 when any step failed.
//
// The real scripts/test-all.sh runs in a scratch copy of the repository's scripts whose
// TypeScript suite is one failing and one passing vitest test (the real `npx vitest run`), with
// `go` and the venv's `python` replaced by recorders, so the Go and Python suites do not run twice.
import { spawn } from "node:child_process";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";

interface Run {
  code: number | null;
  out: string;
}

/** Runs `bash args…` in `cwd` (stdout and stderr together) with the VITEST_* variables of this run removed. */
function bash(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  // The scripts under test read TEST_STEPS: the value this suite itself was run with (`TEST_STEPS=typescript npm test`) must not leak in.
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && k !== "TEST_STEPS"),
  );
  return new Promise((resolve, reject) => {
    const child = spawn("bash", args, {
      cwd,
      env: { ...base, NO_COLOR: "1", FORCE_COLOR: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

/** The summary table's rows after `=== summary`: step → result. */
function summary(out: string): [string, string][] {
  const at = out.lastIndexOf("\n=== summary\n");
  expect(at, "a summary table").toBeGreaterThanOrEqual(0);
  const rows = out.slice(at).split("\n").slice(3);
  return rows
    .map((line) => /^(\S+)\s+(ok|FAILED)\s+(\d+\.\d)\s/.exec(line))
    .filter((m) => m !== null)
    .map((m) => [m[1]!, m[2]!]);
}

async function executable(path: string, text: string): Promise<void> {
  await writeFile(path, text);
  await chmod(path, 0o755);
}

describe("scripts/test-all.sh", () => {
  let dir: string;
  let records: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "agentd-test-all-"));
    records = join(dir, "records.txt");
    await mkdir(join(dir, "scripts"));
    for (const f of ["test-all.sh", "run-steps.sh"])
      await copyFile(join(REPO_ROOT, "scripts", f), join(dir, "scripts", f));
    await symlink(join(REPO_ROOT, "node_modules"), join(dir, "node_modules"));
    await mkdir(join(dir, "clients/go"), { recursive: true });
    await mkdir(join(dir, "clients/python"), { recursive: true });
    await mkdir(join(dir, "fake-bin"));
    // `go` and the venv's python record how they were called; GO_FAIL=vet makes `go vet` fail.
    await executable(
      join(dir, "fake-bin/go"),
      `#!/usr/bin/env bash\necho "go $* (in \${PWD##*/})" >>"${records}"\necho "go says: $1"\n[[ "$1" != "\${GO_FAIL:-}" ]]\n`,
    );
    await mkdir(join(dir, ".tools/venv/bin"), { recursive: true });
    await executable(join(dir, ".tools/venv/bin/python"), `#!/usr/bin/env bash\necho "python $*" >>"${records}"\n`);
    await mkdir(join(dir, "suite"));
    // `npm run build` makes a stand-in of the built CLI; BUILD_FAIL=1 makes it fail.
    await writeFile(
      join(dir, "package.json"),
      JSON.stringify({
        type: "module",
        scripts: { build: 'test -z "$BUILD_FAIL" && mkdir -p dist/src/cli && echo "// built" > dist/src/cli/main.js' },
      }) + "\n",
    );
    // A suite of its own (passed with --config) that records which built copy its servers would run.
    await mkdir(join(dir, "suite-built-copy"));
    await writeFile(
      join(dir, "built-copy.config.ts"),
      `export default { test: { include: ["suite-built-copy/*.test.ts"] } };\n`,
    );
    await writeFile(
      join(dir, "suite-built-copy/records.test.ts"),
      `import { appendFileSync, readFileSync } from "node:fs";\n` +
        `import { it } from "vitest";\n` +
        `it("records AGENTD_TEST_DIST", () => {\n` +
        `  const copy = process.env.AGENTD_TEST_DIST;\n` +
        `  const cli = copy ? readFileSync(copy + "/src/cli/main.js", "utf8").trim() : "-";\n` +
        `  appendFileSync(${JSON.stringify(records)}, "AGENTD_TEST_DIST=" + (copy ?? "unset") + " " + cli + "\\n");\n` +
        `});\n`,
    );
    await writeFile(join(dir, "vitest.config.ts"), `export default { test: { include: ["suite/*.test.ts"] } };\n`);
    await writeFile(
      join(dir, "suite/one.test.ts"),
      `import { expect, it } from "vitest";\n` +
        `it("a passing test", () => expect(1 + 1).toBe(2));\n` +
        `it("the one failing test", () => expect(1 + 1).toBe(3));\n`,
    );
    env = { PATH: `${join(dir, "fake-bin")}:${process.env.PATH}` };
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("with one failing TypeScript test, still runs the Go and Python suites, prints the summary and exits 1", async () => {
    await rm(records, { force: true });
    const run = await bash(dir, ["scripts/test-all.sh"], { ...env, TEST_STEPS: "go,python-env,python,typescript" });
    expect(run.out).toContain("the one failing test");
    expect(run.out).toMatch(/Tests {2}1 failed \| 1 passed/);
    // The Go suite (go vet, then go test, in clients/go) and the Python suite both ran.
    expect((await readFile(records, "utf8")).split("\n").sort()).toEqual(
      ["", "go test -count=1 ./... (in go)", "go vet ./... (in go)", "python -m pytest -q clients/python"].sort(),
    );
    // python-env (scripts/setup-python.sh) is missing in the scratch copy: it fails too, and
    // the Python suite still runs after it.
    expect(summary(run.out)).toEqual([
      ["go", "ok"],
      ["python-env", "FAILED"],
      ["python", "ok"],
      ["typescript", "FAILED"],
    ]);
    expect(run.out).toMatch(/\n2 of 4 steps failed\n$/);
    expect(run.code).toBe(1);
    // The background Go suite's output comes whole, after the foreground steps.
    const goOutput = run.out.indexOf(
      "=== Go client tests (go vet, go test) [go] (ran in the background)\ngo says: vet\ngo says: test\n",
    );
    expect(goOutput).toBeGreaterThan(run.out.indexOf("the one failing test"));
  }, 180_000);

  it("a step that fails ends only that step: the Go suite stops after a failing go vet, the rest runs", async () => {
    await rm(records, { force: true });
    const run = await bash(dir, ["scripts/test-all.sh"], { ...env, TEST_STEPS: "go,python", GO_FAIL: "vet" });
    // No `go test` after the failed vet (the two suites run side by side: order of lines aside).
    expect((await readFile(records, "utf8")).split("\n").sort()).toEqual(
      ["", "go vet ./... (in go)", "python -m pytest -q clients/python"].sort(),
    );
    expect(summary(run.out)).toEqual([
      ["go", "FAILED"],
      ["python", "ok"],
    ]);
    expect(run.out).toContain("=== go: FAILED (exit 1)");
    expect(run.code).toBe(1);
  }, 60_000);

  it("exits 0 with 'all N steps passed' when every step passed; TEST_STEPS leaves the others out", async () => {
    const run = await bash(dir, ["scripts/test-all.sh"], { ...env, TEST_STEPS: "go,python" });
    expect(summary(run.out)).toEqual([
      ["go", "ok"],
      ["python", "ok"],
    ]);
    expect(run.out).toMatch(/\nall 2 steps passed\n$/);
    expect(run.out).not.toContain("[typescript]");
    expect(run.code).toBe(0);
  }, 60_000);

  it("the TypeScript suite's servers run from a copy of the build just made, and from the sources when that build failed", async () => {
    await rm(records, { force: true });
    const built = await bash(dir, ["scripts/test-all.sh", "--config", "built-copy.config.ts"], {
      ...env,
      TEST_STEPS: "build,typescript",
    });
    expect(summary(built.out)).toEqual([
      ["build", "ok"],
      ["typescript", "ok"],
    ]);
    expect(await readFile(records, "utf8")).toBe(`AGENTD_TEST_DIST=${join(dir, ".test-dist")} // built\n`);

    // A failed build removes the copy of the one before: nothing stale is tested.
    await rm(records, { force: true });
    const failed = await bash(dir, ["scripts/test-all.sh", "--config", "built-copy.config.ts"], {
      ...env,
      TEST_STEPS: "build,typescript",
      BUILD_FAIL: "1",
    });
    expect(summary(failed.out)).toEqual([
      ["build", "FAILED"],
      ["typescript", "ok"],
    ]);
    expect(await readFile(records, "utf8")).toBe("AGENTD_TEST_DIST=unset -\n");
  }, 180_000);

  it("arguments after `npm test --` go to vitest", async () => {
    const run = await bash(dir, ["scripts/test-all.sh", "-t", "a passing test"], { ...env, TEST_STEPS: "typescript" });
    expect(run.out).toMatch(/Tests {2}1 passed \| 1 skipped/);
    expect(summary(run.out)).toEqual([["typescript", "ok"]]);
    expect(run.code).toBe(0);
  }, 180_000);
});

describe("scripts/run-steps.sh", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "agentd-run-steps-"));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("prints background steps whole, in the order they started, whatever order they end in", async () => {
    // `slow` ends after `fast`; each waits for a file the other part writes, not for a clock.
    await writeFile(
      join(dir, "steps.sh"),
      `source "${join(REPO_ROOT, "scripts/run-steps.sh")}"\n` +
        `slow() { echo slow-1; until [[ -e fast.done ]]; do sleep 0.05; done; echo slow-2; exit 4; }\n` +
        `fast() { echo fast-1; echo fast-2; touch fast.done; }\n` +
        `start_step slow "the slow one" slow\n` +
        `start_step fast "the fast one" fast\n` +
        `run_step fg "a foreground step" bash -c 'echo fg-out; exit 3'\n` +
        `run_step after "runs after a failure" echo after-out\n` +
        `steps_summary\n`,
    );
    const run = await bash(dir, ["steps.sh"]);
    const lines = run.out.split("\n");
    const order = ["fg-out", "after-out", "slow-1", "slow-2", "fast-1", "fast-2"].map((l) => lines.indexOf(l));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(summary(run.out)).toEqual([
      ["slow", "FAILED"],
      ["fast", "ok"],
      ["fg", "FAILED"],
      ["after", "ok"],
    ]);
    expect(run.out).toContain("=== slow: FAILED (exit 4)");
    expect(run.out).toContain("=== fg: FAILED (exit 3)");
    expect(run.code).toBe(1);
  });
});
