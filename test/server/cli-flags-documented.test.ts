// Every flag `agentd serve --help` lists is documented in docs/server.md's flag table, and every
// flag the README or a docs page mentions is one the CLI knows, so neither drifts from the CLI.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { USAGE } from "../../src/cli/args.js";
import { COPY_STORE_USAGE } from "../../src/cli/copy-store-command.js";
import { INIT_USAGE } from "../../src/cli/init-command.js";
import { REPO_ROOT } from "../harness/agentd-process.js";

/** The flags of the usage text `agentd --help` prints (`--name`, also the `--no-…` forms). */
function usageFlags(usage = USAGE): string[] {
  return [...new Set([...usage.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]))];
}

/** The flags named at the start of a table row (`| \`--flag …\``, several per cell allowed). */
function tableFlags(markdown: string): Set<string> {
  const flags = new Set<string>();
  for (const line of markdown.split("\n")) {
    const cell = /^\| ([^|]*)\|/.exec(line)?.[1] ?? "";
    for (const m of cell.matchAll(/`(--[a-z][a-z0-9-]*)/g)) flags.add(m[1]!);
  }
  return flags;
}

function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no section "## ${heading}"`);
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

describe("the CLI's flags are documented", () => {
  const flags = usageFlags().filter((f) => f !== "--help" && f !== "--version");

  it("the usage text lists the serve flags (the check below has something to check)", () => {
    expect(flags).toEqual(
      expect.arrayContaining([
        "--store",
        "--heartbeat-ttl-ms",
        "--instance-id",
        "--no-takeover",
        "--tenant-max-waiting-input-bytes",
      ]),
    );
  });

  it("the README points to docs/server.md's flag table", () => {
    expect(readFileSync(join(REPO_ROOT, "README.md"), "utf8")).toContain("(docs/server.md#command-line)");
  });

  it("every flag a table of the README or a docs page names is one the CLI knows", () => {
    const known = new Set([...usageFlags(), ...usageFlags(COPY_STORE_USAGE), ...usageFlags(INIT_USAGE)]);
    const pages = [
      "README.md",
      ...readdirSync(join(REPO_ROOT, "docs")).flatMap((f) => (f.endsWith(".md") ? [`docs/${f}`] : [])),
    ];
    const unknown = pages.flatMap((page) =>
      [...tableFlags(readFileSync(join(REPO_ROOT, page), "utf8"))]
        .filter((f) => !known.has(f))
        .map((f) => `${page}: ${f}`),
    );
    expect(unknown).toEqual([]);
  });

  it("in docs/server.md's flag table", () => {
    const documented = tableFlags(readFileSync(join(REPO_ROOT, "docs/server.md"), "utf8"));
    expect(flags.filter((f) => !documented.has(f))).toEqual([]);
  });
});

describe("agentd copy-store's flags are documented", () => {
  it("in docs/stores.md's Moving between stores table", () => {
    // --store is serve's flag, which the usage text refers to for the URI forms.
    const flags = usageFlags(COPY_STORE_USAGE).filter((f) => f !== "--store");
    expect(flags).toEqual(expect.arrayContaining(["--concurrency"]));
    const documented = tableFlags(
      section(readFileSync(join(REPO_ROOT, "docs/stores.md"), "utf8"), "Moving between stores"),
    );
    expect(flags.filter((f) => !documented.has(f))).toEqual([]);
  });
});
