/**
 * Module hooks for a server started from the built copy of the sources (see `AGENTD_TEST_DIST` in
 * agentd-process.ts), loaded with `node --import` on Node's own type stripping, without tsx:
 *
 * - an import of the checkout's sources (`src/`, `stores/`, `gen/ts/`, `examples/`, as `.ts` or as
 *   the `.js` name the sources use) gets the built file of the copy instead, so a test's agents
 *   module (`test/fixtures/*.ts`, which imports `../../src/….js`) and the server share one copy of
 *   the library;
 * - any other relative `.js` import that has no file but a `.ts` beside it gets the `.ts` (the
 *   NodeNext convention of the fixtures, which Node's type stripping does not apply itself).
 *
 * Nothing here runs in a server started from the sources (the default). Plain JavaScript, not
 * TypeScript: every server of the suite loads it, and a `.ts` file here would make each of them
 * load Node's type stripper (about 50 ms of CPU at every start) even when it runs no `.ts` module.
 */
import { existsSync } from "node:fs";
import { registerHooks } from "node:module";
import { pathToFileURL } from "node:url";

const builtCopy = process.env.AGENTD_TEST_DIST;
if (!builtCopy) throw new Error("built-copy-imports.mjs: AGENTD_TEST_DIST names no built copy");

const repoUrl = new URL("../../", import.meta.url).href;
const builtUrl = pathToFileURL(builtCopy.endsWith("/") ? builtCopy : `${builtCopy}/`).href;
const SOURCE_DIRS = ["src/", "stores/", "gen/ts/", "examples/"];

/**
 * The built file for a source file's URL, when the copy has it.
 * @param {string} url
 * @returns {string | undefined}
 */
function builtFile(url) {
  if (!url.startsWith(repoUrl)) return undefined;
  const path = url.slice(repoUrl.length);
  if (!SOURCE_DIRS.some((dir) => path.startsWith(dir)) || !/\.(ts|js)$/.test(path)) return undefined;
  const built = builtUrl + path.replace(/\.ts$/, ".js");
  return existsSync(new URL(built)) ? built : undefined;
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    let resolved;
    try {
      resolved = nextResolve(specifier, context);
    } catch (err) {
      const relative = specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("file:");
      if (
        !relative ||
        !specifier.endsWith(".js") ||
        /** @type {NodeJS.ErrnoException} */ (err).code !== "ERR_MODULE_NOT_FOUND"
      )
        throw err;
      const asTs = new URL(specifier.replace(/\.js$/, ".ts"), context.parentURL).href;
      const built = builtFile(asTs);
      if (built) return { url: built, format: "module", shortCircuit: true };
      if (!existsSync(new URL(asTs))) throw err;
      return { url: asTs, shortCircuit: true };
    }
    const built = builtFile(resolved.url);
    return built ? { url: built, format: "module", shortCircuit: true } : resolved;
  },
});
