import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../harness/agentd-process.js";

/**
 * The `sh` code blocks of one section (from its `## ` heading to the next) of
 * README.md or of another Markdown file of the repository (`docs/turns.md`),
 * in order, exactly as a user would copy them.
 */
export function readmeShellBlocks(heading: string, file = "README.md"): string[] {
  const readme = readFileSync(join(REPO_ROOT, file), "utf8");
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`${file} has no section "## ${heading}"`);
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

/** One fenced code block of README.md or a docs page. */
export interface ReadmeCodeBlock {
  /** The Markdown file it is in, relative to the repository root (`README.md`, `docs/sessions.md`). */
  file: string;
  /** The fence's language (`ts`, `go`, `python`, `sh`, …). */
  lang: string;
  /** The block's text, exactly as in the README. */
  code: string;
  /** The nearest `##`/`###` heading above it. */
  heading: string;
  /** The 1-based line of its opening fence. */
  line: number;
  /**
   * The reason of a `<!-- not run: … -->` comment on the line(s) just above
   * the fence (blank lines allowed), when there is one: the README snippet
   * tests skip (and count) such blocks.
   */
  notRun?: string;
  /**
   * What a `<!-- continues the block above -->` (`"above"`) or `<!-- continues "Heading" -->`
   * (the heading) comment just above the fence says this block continues: the snippet tests run
   * it appended to that block (the previous block of its language in the file, or the first one
   * under that heading), as a reader who typed both would.
   */
  continues?: string;
}

/** Every fenced code block of README.md in one of `langs`, in order (all when `langs` is empty). */
export function readmeCodeBlocks(...langs: string[]): ReadmeCodeBlock[] {
  return markdownCodeBlocks("README.md", ...langs);
}

/**
 * Every fenced code block of `file` (a Markdown file relative to the
 * repository root) in one of `langs`, in order (all when `langs` is empty).
 */
export function markdownCodeBlocks(file: string, ...langs: string[]): ReadmeCodeBlock[] {
  const lines = readFileSync(join(REPO_ROOT, file), "utf8").split("\n");
  const blocks: ReadmeCodeBlock[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const h = /^#{2,3} (.*)$/.exec(line);
    if (h) heading = h[1]!;
    const fence = /^```(\S*)\s*$/.exec(line);
    if (!fence || fence[1] === "") continue;
    const end = lines.indexOf("```", i + 1);
    if (end < 0) throw new Error(`${file}:${i + 1}: unclosed code fence`);
    let above = i - 1;
    while (above >= 0 && lines[above]!.trim() === "") above--;
    const comment = above >= 0 ? /^<!-- not run: (.*?) -->$/.exec(lines[above]!.trim()) : null;
    const continued =
      above >= 0 ? /^<!-- continues (?:the block (above)|"(.+)") -->$/.exec(lines[above]!.trim()) : null;
    if (langs.length === 0 || langs.includes(fence[1]!)) {
      blocks.push({
        file,
        lang: fence[1]!,
        code: lines.slice(i + 1, end).join("\n") + "\n",
        heading,
        line: i + 1,
        ...(comment ? { notRun: comment[1]! } : {}),
        ...(continued ? { continues: continued[1] ?? continued[2]! } : {}),
      });
    }
    i = end;
  }
  return blocks;
}

/**
 * The code a reader has typed by the end of `block`: the code of the block it continues (in
 * turn with what that one continues), then its own. `blocks` are the file's blocks in order.
 * Throws when the continued block is missing, or is not run itself.
 */
export function continuedCode(block: ReadmeCodeBlock, blocks: ReadmeCodeBlock[]): string {
  if (!block.continues) return block.code;
  const before = blocks.slice(0, blocks.indexOf(block)).filter((b) => b.file === block.file && b.lang === block.lang);
  const base = block.continues === "above" ? before.at(-1) : before.find((b) => b.heading === block.continues);
  if (!base) throw new Error(`${block.file}:${block.line}: no ${block.lang} block for "continues ${block.continues}"`);
  if (base.notRun) throw new Error(`${block.file}:${block.line} continues ${base.file}:${base.line}, which is not run`);
  return `${continuedCode(base, blocks)}\n${block.code}`;
}
