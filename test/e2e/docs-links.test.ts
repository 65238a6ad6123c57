/**
 * The README is a front door: every relative link in README.md and in the
 * docs/ pages leads to a file of the repository, and a link with an anchor
 * (`docs/turns.md#cancel-and-steer-a-turn`) to a heading of that file, named
 * as GitHub names it. A page moved or a heading renamed fails here, not in a
 * reader's browser.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../harness/agentd-process.js";

/** The Markdown files checked: README.md and every page under docs/. */
const FILES = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Markdown without its fenced code blocks. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^[ \t]*```[\s\S]*?^[ \t]*```/gm, "");
}

/** Markdown without its code, fenced or inline (links inside code are not links). */
function prose(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** Every anchor a Markdown file offers (duplicates numbered `-1`, `-2` as GitHub does). */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const m of withoutFences(readFileSync(file, "utf8")).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1"));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/** The relative links of a Markdown file: `[text](target)`, without external URLs. */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** What is wrong with one link of `from`, or undefined when it resolves. */
function brokenLink(from: string, target: string): string | undefined {
  const [path, anchor] = target.split("#") as [string, string | undefined];
  const file = path === "" ? join(REPO_ROOT, from) : join(REPO_ROOT, dirname(from), decodeURIComponent(path));
  if (!existsSync(file)) return `${from}: ${target}: no file ${relative(REPO_ROOT, file)}`;
  if (anchor === undefined || !file.endsWith(".md") || statSync(file).isDirectory()) return undefined;
  if (!anchors(file).has(anchor)) return `${from}: ${target}: no heading #${anchor} in ${relative(REPO_ROOT, file)}`;
  return undefined;
}

describe("the links of the README and the docs pages", () => {
  it("the README links a docs page for each topic of its index, and stays under 400 lines", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(400);
    const linked = new Set(relativeLinks(readme).map((t) => t.split("#")[0]));
    for (const page of [
      "docs/stores.md",
      "docs/background-work.md",
      "docs/turns.md",
      "docs/webhooks.md",
      "docs/security.md",
      "docs/limits.md",
      "docs/observability.md",
      "docs/errors.md",
      "docs/client-typescript.md",
      "docs/client-go.md",
      "docs/client-python.md",
      "docs/restarts.md",
      "docs/input-bounds.md",
      "docs/inspector.md",
    ]) {
      expect(linked, page).toContain(page);
    }
  });

  for (const file of FILES) {
    it(`every relative link of ${file} resolves, anchors included`, () => {
      const markdown = readFileSync(join(REPO_ROOT, file), "utf8");
      const broken = relativeLinks(markdown).flatMap((t) => brokenLink(file, t) ?? []);
      expect(broken).toEqual([]);
    });
  }
});
