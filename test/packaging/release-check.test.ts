/**
 * A release, all but the upload: scripts/release-check.sh on the packed
 * tarball (npm publish --dry-run; the Python sdists and wheels built and
 * `twine check`ed; one version everywhere), and the release workflow that
 * would publish exactly what it checked, with provenance.
 */
import { execFile } from "node:child_process";
import { readdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTD_PACKAGE } from "../../src/cli/package-name.js";
import { REPO_ROOT } from "../harness/agentd-process.js";
import { cleanEnv, packAgentd, run, tempProject } from "./npm-package.js";

/** The venv of scripts/setup-release-tools.sh (AGENTD_RELEASE_VENV, as the scripts read it). */
const RELEASE_VENV = process.env.AGENTD_RELEASE_VENV ?? ".tools/release-venv";
const ENV = cleanEnv({ AGENTD_RELEASE_VENV: RELEASE_VENV });

/** Runs scripts/release-check.sh; resolves to its exit code and output (never rejects). */
function releaseCheck(out: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      join(REPO_ROOT, "scripts/release-check.sh"),
      [out],
      { cwd: REPO_ROOT, env, timeout: 280_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

const manifest = async () =>
  JSON.parse(await readFile(join(REPO_ROOT, "package.json"), "utf8")) as {
    name: string;
    version: string;
    repository: { url: string };
    publishConfig: { access: string };
  };

describe("a release without the upload (scripts/release-check.sh)", { timeout: 300_000 }, () => {
  let work: string;
  let out: string;
  let result: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    await run(join(REPO_ROOT, "scripts/setup-release-tools.sh"), [], { cwd: REPO_ROOT, env: ENV, timeoutMs: 280_000 });
    work = await tempProject("release");
    out = join(work, "release-out");
    const tarball = await packAgentd(work);
    result = await releaseCheck(out, { ...ENV, AGENTD_TARBALL: tarball });
  }, 600_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("passes: versions agree, npm publish --dry-run and twine check --strict succeed", () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/PASSED/);
  });

  it("would publish the scoped npm package, publicly, with the built files and the command", async () => {
    const { name, version, repository, publishConfig } = await manifest();
    expect(name).toBe(AGENTD_PACKAGE);
    expect(publishConfig.access).toBe("public"); // a scoped package is private unless told
    expect(repository.url).toBe("git+https://github.com/agentd-dev/agentd.git"); // provenance checks it
    const report = JSON.parse(await readFile(join(out, "npm-publish.json"), "utf8")) as Record<
      string,
      { name: string; version: string; files: { path: string }[] }
    >;
    const published = report[AGENTD_PACKAGE]!;
    expect(published.name).toBe(AGENTD_PACKAGE);
    expect(published.version).toBe(version);
    const paths = published.files.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(["bin/agentd.js", "dist/src/index.js", "dist/src/client/index.js"]));
    expect(paths.filter((p) => p.startsWith("src/") || p.startsWith("test/"))).toEqual([]);
  });

  it("built an sdist and a wheel of agentd-proto and agentd-client, at the same version, the client pinning the proto", async () => {
    const { version } = await manifest();
    const files = (await readdir(join(out, "python"))).sort();
    expect(files).toEqual([
      `agentd_client-${version}-py3-none-any.whl`,
      `agentd_client-${version}.tar.gz`,
      `agentd_proto-${version}-py3-none-any.whl`,
      `agentd_proto-${version}.tar.gz`,
    ]);
    const python = resolve(REPO_ROOT, RELEASE_VENV, "bin/python");
    const list = (wheel: string) =>
      run(
        python,
        [
          "-c",
          "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print('\\n'.join(z.namelist())); " +
            "print(z.read([n for n in z.namelist() if n.endswith('METADATA')][0]).decode())",
          join(out, "python", wheel),
        ],
        { cwd: work, env: ENV },
      ).then((r) => r.stdout);
    const proto = await list(`agentd_proto-${version}-py3-none-any.whl`);
    expect(proto).toContain("agentd/v1/agent_service_pb2_grpc.py");
    expect(proto).toMatch(/^Name: agentd-proto$/m);
    const client = await list(`agentd_client-${version}-py3-none-any.whl`);
    expect(client).toContain("agentd_client/__init__.py");
    expect(client).toMatch(/^Name: agentd-client$/m);
    expect(client).toMatch(new RegExp(`^Requires-Dist: agentd-proto==${version.replaceAll(".", "\\.")}$`, "m"));
  });

  it("refuses a tag that is not the version, before building anything", async () => {
    const refused = await releaseCheck(join(work, "refused"), { ...ENV, RELEASE_TAG: "v9.9.9" });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`the tag v9.9.9 is not v${(await manifest()).version}`);
  });
});

describe("the release workflow (.github/workflows/release.yml)", () => {
  type Step = { run?: string; uses?: string; env?: Record<string, string>; with?: Record<string, string> };
  type Job = { needs?: string | string[]; permissions?: Record<string, string>; steps: Step[] };
  let workflow: { on: { push: { tags: string[] } }; jobs: Record<string, Job> };
  beforeAll(async () => {
    workflow = parse(await readFile(join(REPO_ROOT, ".github/workflows/release.yml"), "utf8"));
  });

  it("runs on a version tag and checks the release first, with the tag", () => {
    expect(workflow.on.push.tags).toEqual(["v[0-9]+.[0-9]+.[0-9]+*"]);
    const check = workflow.jobs.check!.steps.find((s) => s.run?.includes("scripts/release-check.sh"));
    expect(check?.env?.RELEASE_TAG).toBe("${{ github.ref_name }}");
    expect(workflow.jobs.check!.steps.some((s) => s.run === "scripts/setup-release-tools.sh")).toBe(true);
  });

  it("publishes the checked npm tarball with provenance (an OIDC token)", () => {
    const npm = workflow.jobs.npm!;
    expect(npm.needs).toBe("check");
    expect(npm.permissions?.["id-token"]).toBe("write");
    expect(npm.steps.map((s) => s.run ?? "")).toContain("npm publish --provenance --access public release-out/*.tgz");
  });

  it("publishes the checked Python files by PyPI trusted publishing (no password)", () => {
    const pypi = workflow.jobs.pypi!;
    expect(pypi.needs).toBe("check");
    expect(pypi.permissions?.["id-token"]).toBe("write");
    const publish = pypi.steps.find((s) => s.uses?.startsWith("pypa/gh-action-pypi-publish@"));
    expect(publish?.with).toEqual({ "packages-dir": "release-out/python/" });
  });

  it("tags the Go modules at the same version once both registries have it", () => {
    const go = workflow.jobs.go!;
    expect(go.needs).toEqual(["npm", "pypi"]);
    const script = go.steps.map((s) => s.run ?? "").join("\n");
    expect(script).toContain('git tag "gen/go/${GITHUB_REF_NAME}"');
    expect(script).toContain('git tag "clients/go/${GITHUB_REF_NAME}"');
  });
});
