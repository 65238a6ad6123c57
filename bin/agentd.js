#!/usr/bin/env node
// The `agentd` command.
//
// In a checkout of the repository (src/cli/main.ts next to this file) it runs
// the TypeScript sources through tsx, so development never needs a build. In
// an installed package it runs the built CLI (dist/src/cli/main.js) on plain
// Node.js; tsx (a peer dependency) is registered for both module systems when
// it is installed, so agents modules may be TypeScript whether the user's
// package is ESM or CommonJS (npm init's default). Without tsx, JavaScript
// agents modules work and a TypeScript one fails with a message saying to
// install tsx.
import { existsSync } from "node:fs";
import { nodeVersionProblem } from "./node-version-check.js";

const tooOld = nodeVersionProblem(process.versions.node);
if (tooOld) {
  process.stderr.write(`agentd: ${tooOld}\n`);
  process.exit(2);
}
const { resolveAgentdToThisCopy } = await import("./self-resolve.js");

const source = new URL("../src/cli/main.ts", import.meta.url);
const built = new URL("../dist/src/cli/main.js", import.meta.url);

let tsx = true;
try {
  const [{ register: registerEsm }, { register: registerCommonJs }] = await Promise.all([
    import("tsx/esm/api"),
    import("tsx/cjs/api"),
  ]);
  registerEsm();
  registerCommonJs();
} catch (err) {
  if (err?.code !== "ERR_MODULE_NOT_FOUND" && err?.code !== "MODULE_NOT_FOUND") throw err;
  tsx = false;
}
// Read by src/cli/load-agents.ts to explain a TypeScript agents module that fails to load.
globalThis[Symbol.for("agentd.tsxRegistered")] = tsx;

const fromSource = existsSync(source) && tsx;
// An agents module's `import "@agentd-dev/agentd"` gets this copy (see self-resolve.js).
resolveAgentdToThisCopy(new URL("../", import.meta.url), fromSource);

if (fromSource) {
  await import(source.href);
} else if (existsSync(built)) {
  await import(built.href);
} else {
  process.stderr.write(
    existsSync(source)
      ? "agentd: running from the sources needs tsx (npm install), or build first (npm run build)\n"
      : "agentd: dist/src/cli/main.js is missing: this package was not built (npm run build)\n",
  );
  process.exit(2);
}
