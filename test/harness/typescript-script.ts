import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

// No vitest imports: test processes' own children (a store test's second writer) load this file.

/** The module hooks that give a script the built copy of the sources (see built-copy-imports.mjs). */
const BUILT_COPY_HOOKS = fileURLToPath(new URL("./built-copy-imports.mjs", import.meta.url));

/** The tsx loader by absolute URL, so a script started in another working directory finds it. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/**
 * The Node.js arguments that run a TypeScript script of the test tree (`node <these> <script> …`,
 * e.g. a store test's second process): on the test command's built copy of the sources
 * (`AGENTD_TEST_DIST`) with Node's own type stripping, so the script and what it imports must be
 * erasable TypeScript (no parameter properties, no enums); without a built copy, through tsx. The
 * built way starts without tsx's transpiler service, at a fraction of the CPU.
 */
export function typeScriptScriptArgs(): string[] {
  return process.env.AGENTD_TEST_DIST ? ["--import", BUILT_COPY_HOOKS] : ["--import", TSX_LOADER];
}
