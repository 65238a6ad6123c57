/**
 * Helpers of the packaging tests: pack this repository as users get it
 * (`npm pack`, whose `prepack` runs `npm run build`) and install the tarball
 * into fresh temporary projects outside the repository, with plain Node.js.
 */
import { execFile as execFileCallback } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "../harness/agentd-process.js";

const execFile = promisify(execFileCallback);

/** The project's Node 24 (the `node` devDependency): what `npm start` and the tests run on. */
export const NODE = existsSync(join(REPO_ROOT, "node_modules/node/bin/node"))
  ? join(REPO_ROOT, "node_modules/node/bin/node")
  : process.execPath;

/**
 * The environment for npm and the installed `agentd`: the project's Node
 * first on PATH (so `npx`, npm and bin shebangs run on it), and no `npm_*`
 * variables inherited from an enclosing `npm test` (which would leak its
 * configuration into the temp projects). The repository's node_modules/.bin is
 * NOT on PATH, so nothing (tsx included) comes from the checkout.
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.toLowerCase().startsWith("npm_") || key === "INIT_CWD" || key === "NODE_OPTIONS") continue;
    env[key] = value;
  }
  const repoBin = join(REPO_ROOT, "node_modules/.bin");
  const path = (env.PATH ?? "").split(":").filter((dir) => dir && dir !== repoBin && dir !== repoBin + "/");
  env.PATH = [dirname(NODE), ...path].join(":");
  return { ...env, ...extra };
}

/** Runs a command; rejects with its output when it fails. */
export async function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFile(command, args, {
      cwd: options.cwd,
      env: options.env ?? cleanEnv(),
      timeout: options.timeoutMs ?? 170_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `${command} ${args.join(" ")} failed in ${options.cwd}: ${e.message}\n${e.stdout ?? ""}\n${e.stderr ?? ""}`,
      { cause: err },
    );
  }
}

const LOCK = join(REPO_ROOT, ".cache/npm-pack.lock");

/**
 * Set under `npm test`: scripts/test-all.sh's build step ran `npm run build` (the `prepack` script
 * itself) in this checkout, so dist/ is this run's build and a pack need not rebuild it; the first
 * pack of the run is kept for the others, inside the run's built copy (`AGENTD_TEST_DIST`, which
 * test-all.sh makes anew each run, so no run gets an earlier run's tarball).
 */
const SHARED_PACK = process.env.AGENTD_TEST_DIST ? join(process.env.AGENTD_TEST_DIST, ".packed") : undefined;

/**
 * Packs the repository into `destination` and returns the tarball's path.
 * `npm pack` rebuilds dist/ from scratch (prepack), so concurrent packs (the
 * packaging test files run in parallel) take turns through a lock directory.
 * Under `npm test` (see {@link SHARED_PACK}) it packs the build the test
 * command made, without running `prepack` again: the same files, and the four
 * packaging files no longer rebuild dist/ one after another (the packaging
 * tests took 102 CPU-seconds with the rebuilds, 60 without), once per run: the
 * packaging files get copies of the first one's tarball ({@link SHARED_PACK}).
 */
export async function packAgentd(destination: string): Promise<string> {
  await mkdir(dirname(LOCK), { recursive: true });
  const deadline = Date.now() + 170_000;
  for (;;) {
    try {
      await mkdir(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const age = Date.now() - (await stat(LOCK).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > 300_000) await rm(LOCK, { recursive: true, force: true }); // left by a killed run
      if (Date.now() > deadline) throw new Error(`${LOCK} held for too long`, { cause: err });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    if (SHARED_PACK) {
      await mkdir(SHARED_PACK, { recursive: true });
      if (!(await readdir(SHARED_PACK)).some((name) => name.endsWith(".tgz")))
        await run("npm", ["pack", "--ignore-scripts", "--pack-destination", SHARED_PACK, "--silent"], {
          cwd: REPO_ROOT,
        });
      await cp(SHARED_PACK, destination, { recursive: true });
    } else {
      await run("npm", ["pack", "--pack-destination", destination, "--silent"], { cwd: REPO_ROOT });
    }
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
  const tarballs = (await readdir(destination)).filter((name) => name.endsWith(".tgz"));
  if (tarballs.length !== 1) throw new Error(`npm pack left ${tarballs.length} tarballs in ${destination}`);
  return join(destination, tarballs[0]!);
}

/** A fresh temporary npm project (ESM) named `name`, outside the repository. */
export async function tempProject(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `agentd-${name}-`));
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name, version: "1.0.0", private: true, type: "module" }, null, 2),
  );
  return dir;
}

/** `npm install` in `project`, from the local cache where it can (the registry otherwise). */
export async function npmInstall(project: string, args: readonly string[]): Promise<void> {
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...args], {
    cwd: project,
  });
}

/** The packages npm installed in `project` (entries of node_modules/.package-lock.json). */
export async function installedPackages(project: string): Promise<string[]> {
  const lock = JSON.parse(await readFile(join(project, "node_modules/.package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  return Object.keys(lock.packages)
    .filter((key) => key.startsWith("node_modules/"))
    .map((key) => key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length))
    .sort();
}
