#!/usr/bin/env node
// The `agentd` command. Registers tsx for both module systems, so the CLI and
// user agent modules can be TypeScript whether the user's package is ESM or
// CommonJS (npm init's default), then runs the CLI (src/cli/main.ts).
import { register as registerCommonJs } from "tsx/cjs/api";
import { register as registerEsm } from "tsx/esm/api";

registerEsm();
registerCommonJs();
await import("../src/cli/main.ts");
