// The README's Python install (`pip install ./gen/python ./clients/python`) builds in the
// source trees and leaves build/ (and *.egg-info) folders behind: git must ignore them and
// scripts/check-generated.sh must not count them as stale generated code. Runs on a scratch
// copy of what the check needs, so the checkout itself is never touched.
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";

const exec = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), "agentd-pip-build-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every file under `dir`, as paths relative to `root`. */
function filesUnder(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

describe("pip install ./gen/python ./clients/python leaves build artefacts", () => {
  it("that .gitignore ignores and check-generated.sh does not count as stale", { timeout: 300_000 }, async () => {
    const skip = (src: string) => !/(^|\/)(build|__pycache__|[^/]*\.egg-info)$/.test(src);
    for (const path of [
      "scripts",
      "proto",
      "proto-vendor",
      "gen",
      "clients/python",
      "buf.yaml",
      "buf.gen.yaml",
      "buf.gen.grpc.yaml",
      "package.json",
    ]) {
      cpSync(join(REPO_ROOT, path), join(scratch, path), { recursive: true, filter: skip });
    }
    for (const link of ["node_modules", ".tools"]) symlinkSync(join(REPO_ROOT, link), join(scratch, link));

    // What `pip install` does to the source trees (build in place), without installing anything:
    // the venv's setuptools builds both wheels, offline.
    await exec(
      join(REPO_ROOT, ".tools/venv/bin/python"),
      [
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--wheel-dir",
        join(scratch, "wheels"),
        "./gen/python",
        "./clients/python",
      ],
      { cwd: scratch, timeout: 240_000 },
    );
    const artefacts = [...filesUnder(scratch, "gen/python/build"), ...filesUnder(scratch, "clients/python/build")];
    expect(artefacts.length).toBeGreaterThan(0);

    // git (in the real checkout) ignores every one of them.
    const child = execFile("git", ["check-ignore", "--no-index", "--stdin"], { cwd: REPO_ROOT });
    let ignored = "";
    child.stdout!.on("data", (d) => (ignored += d));
    child.stdin!.end(artefacts.join("\n") + "\n");
    await new Promise((resolve) => child.once("exit", resolve));
    expect(ignored.trim().split("\n").sort()).toEqual([...artefacts].sort());

    const { stdout } = await exec("bash", [join(scratch, "scripts/check-generated.sh")], {
      cwd: scratch,
      timeout: 240_000,
    });
    expect(stdout).toContain("gen/ is up to date");
  });
});
