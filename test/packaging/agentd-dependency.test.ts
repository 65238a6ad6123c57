import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENTD_PACKAGE } from "../../src/cli/package-name.js";
import { defaultAgentdDependency } from "../../src/cli/scaffold/agentd-dependency.js";
import { REPO_ROOT } from "../harness/agentd-process.js";

/** A project with agentd installed in node_modules, its hidden lockfile saying `resolved`. */
async function installedCopy(resolved: string | undefined): Promise<{ project: string; root: string }> {
  const project = await mkdtemp(join(tmpdir(), "agentd-dependency-"));
  const root = join(project, "node_modules", "@agentd-dev", "agentd");
  await mkdir(root, { recursive: true });
  const entry = resolved === undefined ? { version: "0.1.0" } : { version: "0.1.0", resolved };
  await writeFile(
    join(project, "node_modules", ".package-lock.json"),
    JSON.stringify({ packages: { [`node_modules/${AGENTD_PACKAGE}`]: entry } }),
  );
  return { project, root };
}

describe("the agentd a new project depends on by default", () => {
  it("is the tarball the running copy was installed from", async () => {
    const { project, root } = await installedCopy("file:../dist/agentd-dev-agentd-0.1.0.tgz");
    expect(defaultAgentdDependency(root, AGENTD_PACKAGE, "0.1.0")).toEqual({
      spec: `file:${join(project, "..", "dist", "agentd-dev-agentd-0.1.0.tgz")}`,
      source: `the tarball ${join(project, "..", "dist", "agentd-dev-agentd-0.1.0.tgz")}`,
    });
  });

  it("is the published version when the running copy came from the registry", async () => {
    const { root } = await installedCopy("https://registry.npmjs.org/@agentd-dev/agentd/-/agentd-0.1.0.tgz");
    expect(defaultAgentdDependency(root, AGENTD_PACKAGE, "0.1.0")).toEqual({
      spec: "^0.1.0",
      source: "the npm registry",
    });
  });

  it("is the published version when no lockfile says where the copy came from", async () => {
    const { root } = await installedCopy(undefined);
    expect(defaultAgentdDependency(root, AGENTD_PACKAGE, "0.1.0").spec).toBe("^0.1.0");
  });

  it("is published under a scoped name, and the repository's package.json says the same", async () => {
    expect(AGENTD_PACKAGE).toBe("@agentd-dev/agentd");
    const manifest = JSON.parse(await readFile(join(REPO_ROOT, "package.json"), "utf8")) as { name: string };
    expect(manifest.name).toBe(AGENTD_PACKAGE);
  });

  it("is the checkout it runs in, built", () => {
    const checkout = REPO_ROOT.replace(/\/$/, "");
    const dependency = defaultAgentdDependency(checkout, AGENTD_PACKAGE, "0.1.0");
    expect(dependency.spec).toBe(`file:${checkout}`);
    expect(dependency.source).toBe(`the checkout ${checkout}`);
  });

  it("says to build a checkout that has no dist/", async () => {
    const checkout = await mkdtemp(join(tmpdir(), "agentd-checkout-"));
    await mkdir(join(checkout, "src", "cli"), { recursive: true });
    await writeFile(join(checkout, "src", "cli", "main.ts"), "");
    expect(defaultAgentdDependency(checkout, AGENTD_PACKAGE, "0.1.0")).toEqual({
      spec: `file:${checkout}`,
      source: `the checkout ${checkout}`,
      before: `build that checkout first: (cd ${checkout} && npm run build)`,
    });
  });
});
