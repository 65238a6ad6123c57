import { parseArgs, type ParseArgsConfig } from "node:util";

/**
 * Turns Node's `parseArgs` errors into messages about agentd's flags: an
 * unknown flag names the closest known one (`--prot` → `--port`), a flag
 * missing its value says so, and neither repeats Node's advice about
 * positional arguments, which never applies to agentd.
 */
export function describeFlagError(err: unknown, known: readonly string[]): string {
  const error = err as { code?: string; message?: string };
  const message = error.message ?? String(err);
  if (error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const flag = /'([^']+)'/.exec(message)?.[1] ?? message;
    const closest = closestFlag(flag, known);
    return `unknown flag ${flag}${closest ? `; did you mean --${closest}?` : ""}`;
  }
  if (error.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const flag = /'(-[^' ]+)/.exec(message)?.[1];
    if (flag && message.includes("argument missing")) return `${flag} needs a value`;
    if (flag && message.includes("does not take an argument")) return `${flag} takes no value`;
  }
  return message.split("\n")[0]!;
}

/**
 * The known flag nearest to `given` by edit distance (a transposition counts
 * as one edit), when it is near enough to be a typo: at most 2 edits, or a
 * third of the flag's length for long flags. Undefined when nothing is close.
 */
export function closestFlag(given: string, known: readonly string[]): string | undefined {
  const name = given.replace(/^-+/, "").split("=")[0]!;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(2, Math.floor(name.length / 3));
  return bestDistance <= allowed ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, d[i - 2]![j - 2]! + 1);
      d[i]![j] = value;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * `parseArgs` whose errors are agentd's (see {@link describeFlagError}): the
 * thrown Error's message is one line naming the flag and, for a typo, the
 * closest known flag.
 */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (err) {
    throw new Error(describeFlagError(err, Object.keys(config.options ?? {})), { cause: err });
  }
}
