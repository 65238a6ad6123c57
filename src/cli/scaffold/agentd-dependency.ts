import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The dependency spec a new project gets for agentd, and what to tell the user about it. */
export interface AgentdDependency {
  /** An npm dependency spec: `^1.2.3`, `file:/abs/agentd-1.2.3.tgz` or `file:/abs/checkout`. */
  spec: string;
  /** Where it comes from, for the user: "the registry", "the tarball …", "the checkout …". */
  source: string;
  /** A step the user must take before `npm install` works, when there is one. */
  before?: string;
}

/**
 * The package root of the agentd that runs this code: the nearest directory
 * above `from` (a module URL) whose package.json is `name`'s.
 */
export function ownPackageRoot(from: string, name: string): string | undefined {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === name) return dir;
      } catch {
        // not a readable manifest: keep looking up
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * Which agentd a project made by `agentd init` depends on by default: the
 * same build that runs the command. Installed from a tarball (the enclosing
 * project's hidden lockfile, `node_modules/.package-lock.json`, says
 * `resolved: file:…`), that tarball; run from a checkout of the repository,
 * that checkout (which must be built: its `exports` point to dist/); installed
 * from the registry (or when nothing says otherwise), `^version`.
 */
export function defaultAgentdDependency(root: string | undefined, name: string, version: string): AgentdDependency {
  const registry: AgentdDependency = { spec: `^${version}`, source: "the npm registry" };
  if (root === undefined) return registry;
  const installedAt = `${sep}node_modules${sep}${name.split("/").join(sep)}`;
  if (!root.endsWith(installedAt)) {
    if (!existsSync(join(root, "src", "cli", "main.ts"))) return registry;
    return {
      spec: `file:${root}`,
      source: `the checkout ${root}`,
      ...(existsSync(join(root, "dist", "src", "index.js"))
        ? {}
        : { before: `build that checkout first: (cd ${root} && npm run build)` }),
    };
  }
  const project = root.slice(0, -installedAt.length);
  const resolved = hiddenLockfileEntry(project, name)?.resolved;
  if (resolved?.startsWith("file:")) {
    const target = resolve(project, resolved.slice("file:".length));
    return { spec: `file:${target}`, source: `the tarball ${target}` };
  }
  return registry;
}

/** The entry of `node_modules/<name>` in `project`'s hidden lockfile, when there is one. */
function hiddenLockfileEntry(project: string, name: string): { resolved?: string } | undefined {
  try {
    const lock = JSON.parse(readFileSync(join(project, "node_modules", ".package-lock.json"), "utf8")) as {
      packages?: Record<string, { resolved?: string }>;
    };
    return lock.packages?.[`node_modules/${name}`];
  } catch {
    return undefined;
  }
}
