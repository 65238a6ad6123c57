import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { parseFlags } from "./flag-suggestion.js";
import { AGENTD_PACKAGE } from "./package-name.js";
import { projectFiles } from "./scaffold/project-files.js";
import { defaultAgentdDependency, ownPackageRoot, type AgentdDependency } from "./scaffold/agentd-dependency.js";

/** Usage of `agentd init`. */
export const INIT_USAGE = `Usage: agentd init [directory] [--agentd-version SPEC]

Creates a project that serves one agent: package.json, tsconfig.json, agents.ts, a test of the
agent over gRPC (vitest), README.md and .gitignore. Then: npm install && npm start; npm test.
The directory (default: the current one) may exist but must not hold any of those files.
--agentd-version is the npm dependency spec of agentd. Default: the agentd that runs this
command — the tarball it was installed from, the checkout it runs in, or ^ its version when it
came from the registry.
`;

/** A package name npm accepts, made from the directory's name. */
function packageName(dir: string): string {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[._-]+/, "");
  return name || "agentd-project";
}

/**
 * `agentd init [dir]`: writes the scaffold (see {@link projectFiles}) into
 * `dir`, refusing (exit 2, nothing written) when any of its files exists.
 * Resolves to the exit code.
 */
export async function initCommand(args: readonly string[], agentdVersion: string): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags({
      args: [...args],
      allowPositionals: true,
      options: { "agentd-version": { type: "string" }, help: { type: "boolean", short: "h" } },
    });
  } catch (err) {
    process.stderr.write(`agentd: init: ${(err as Error).message}\n${INIT_USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(INIT_USAGE);
    return 0;
  }
  if (parsed.positionals.length > 1) {
    process.stderr.write(`agentd: init takes at most one directory\n${INIT_USAGE}`);
    return 2;
  }
  const dir = resolve(process.cwd(), parsed.positionals[0] ?? ".");
  const given = parsed.values["agentd-version"];
  const dependency: AgentdDependency =
    given !== undefined
      ? { spec: given, source: "--agentd-version" }
      : defaultAgentdDependency(ownPackageRoot(import.meta.url, AGENTD_PACKAGE), AGENTD_PACKAGE, agentdVersion);
  const files = projectFiles({ name: packageName(dir), agentdSpec: dependency.spec });
  const taken = Object.keys(files).filter((path) => existsSync(join(dir, path)));
  if (taken.length > 0) {
    process.stderr.write(`agentd: init: ${dir} already has ${taken.join(", ")}; nothing was written\n`);
    return 2;
  }
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text, { flag: "wx" });
  }
  const entries = await readdir(dir);
  const where = parsed.positionals[0] ?? ".";
  process.stdout.write(
    `agentd: created an agentd project in ${dir} (${entries.length} entries)\n` +
      `agentd: it depends on ${AGENTD_PACKAGE} ${dependency.spec} (from ${dependency.source})\n\n` +
      (dependency.before ? `  # ${dependency.before}\n` : "") +
      `  cd ${/^[\w./-]+$/.test(where) ? where : JSON.stringify(where)}\n  npm install\n  npm start     # serves agents.ts on 127.0.0.1:50051\n  npm test      # calls the agent over gRPC\n`,
  );
  return 0;
}
