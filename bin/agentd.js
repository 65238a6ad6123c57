#!/usr/bin/env node
// The `agentd` command. Registers tsx so the CLI and user agent modules can
// be TypeScript, then runs the CLI (src/cli/main.ts).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
