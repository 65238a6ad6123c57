// Resolves "@agentd-dev/agentd" and "@agentd-dev/agentd/<subpath>" (package.json's
// name) imported by a user's agents module
// to the copy of agentd that runs the CLI, so that one process has one copy of
// agentd whatever the module is (ESM or CommonJS, TypeScript or JavaScript,
// with or without agentd in its own node_modules) and a checkout serves
// modules that import "@agentd-dev/agentd" without a build.
import { readFileSync } from "node:fs";
import module from "node:module";

/**
 * Registers a module resolve hook (both `import` and `require`) mapping the
 * package's export subpaths to files of the copy at `root` (a URL ending in
 * "/"): its TypeScript sources when `fromSource`, else its build. Returns
 * false where the running Node.js has no `module.registerHooks` (before
 * 22.15), where nothing is mapped and Node's own resolution applies.
 */
export function resolveAgentdToThisCopy(root, fromSource) {
  if (typeof module.registerHooks !== "function") return false;
  const manifest = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
  const targets = new Map();
  for (const [subpath, entry] of Object.entries(manifest.exports)) {
    const target = typeof entry === "string" ? entry : entry.default;
    if (typeof target !== "string") continue;
    targets.set(subpath, fromSource ? sourceOf(target) : target);
  }
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const url = mapSpecifier(specifier, manifest.name, targets, root);
      return url === undefined ? nextResolve(specifier, context) : { url, shortCircuit: true };
    },
  });
  return true;
}

/** "./dist/src/x.js" → "./src/x.ts" (and the same for stores/ and gen/ts/). */
function sourceOf(target) {
  return target.endsWith(".js") && target.startsWith("./dist/")
    ? "./" + target.slice("./dist/".length, -".js".length) + ".ts"
    : target;
}

function mapSpecifier(specifier, name, targets, root) {
  if (specifier !== name && !specifier.startsWith(name + "/")) return undefined;
  const subpath = "." + specifier.slice(name.length);
  const exact = targets.get(subpath);
  if (exact !== undefined) return new URL(exact, root).href;
  for (const [pattern, target] of targets) {
    const star = pattern.indexOf("*");
    if (star < 0 || !subpath.startsWith(pattern.slice(0, star)) || !subpath.endsWith(pattern.slice(star + 1))) continue;
    const matched = subpath.slice(star, subpath.length - (pattern.length - star - 1));
    return new URL(target.replace("*", matched), root).href;
  }
  return undefined;
}
