import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Where a module's source is wrong and why: `file:line:column: reason`. */
export interface SourceLocation {
  /** The file as the loader named it (an absolute path). */
  file: string;
  line: number;
  column?: number;
  /** The loader's reason, e.g. `Expected identifier but found ","`. */
  reason: string;
}

/**
 * What went wrong when importing an agents module, in one line a user can act
 * on. A compile error (tsx/esbuild's `TransformError`, or Node's own
 * `SyntaxError` for JavaScript) is told as `file:line:column: reason`; any
 * other error keeps its whole first line. Never longer than a few hundred
 * characters: the rest of a stack is not the point.
 */
export function describeModuleLoadFailure(err: unknown, path: string | undefined): string {
  if (!(err instanceof Error)) return String(err);
  const location = transformErrorLocation(err) ?? (path ? syntaxErrorLocation(err, path) : undefined);
  if (location) {
    const at = `${location.file}:${location.line}${location.column === undefined ? "" : `:${location.column}`}`;
    return `${at}: ${location.reason}`;
  }
  return err.message.split("\n")[0] ?? err.name;
}

/**
 * The first error of an esbuild transform failure (what tsx throws for a
 * TypeScript module that does not parse): its message is `Transform failed
 * with N error(s):` followed by one `file:line:col: ERROR: reason` line each.
 */
export function transformErrorLocation(err: Error): SourceLocation | undefined {
  if (!err.message.startsWith("Transform failed")) return undefined;
  for (const line of err.message.split("\n").slice(1)) {
    const match = /^(.*?):(\d+):(\d+): (?:ERROR: )?(.*)$/.exec(line.trim());
    if (match) return { file: match[1]!, line: Number(match[2]), column: Number(match[3]), reason: match[4]! };
  }
  return undefined;
}

/**
 * Node's `SyntaxError` for an ES module carries no location, so the file is
 * checked again with `node --check`, whose report starts with `file:line`,
 * names the column with a caret, and ends with the reason.
 */
function syntaxErrorLocation(err: Error, path: string): SourceLocation | undefined {
  if (err.name !== "SyntaxError" || /\.[cm]?tsx?$/.test(path)) return undefined;
  const check = spawnSync(process.execPath, ["--check", path], { encoding: "utf8", timeout: 10_000 });
  const lines = (check.stderr ?? "").split("\n");
  const where = /^(.*):(\d+)$/.exec(lines[0] ?? "");
  if (!where) return undefined;
  const caret = lines.findIndex((line) => /^\s*\^+\s*$/.test(line));
  const file = where[1]!.startsWith("file:") ? fileURLToPath(where[1]!) : where[1]!;
  return {
    file,
    line: Number(where[2]),
    ...(caret > 0 ? { column: lines[caret]!.indexOf("^") + 1 } : {}),
    reason: err.message,
  };
}
