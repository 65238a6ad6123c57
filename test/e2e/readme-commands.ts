import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../harness/agentd-process.js";

/**
 * The `sh` code blocks of one README section (from its `## ` heading to the
 * next), in order, exactly as a user would copy them.
 */
export function readmeShellBlocks(heading: string): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section "## ${heading}"`);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** Splits grpcurl's output stream of pretty-printed JSON messages. */
export function jsonMessages(output: string): Record<string, any>[] {
  return output
    .split(/\n(?=\{)/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => JSON.parse(s));
}
