/**
 * Summarises V8 `.cpuprofile` files (from `node --cpu-prof`, e.g. agentd under
 * `BENCH_CPU_PROF=<dir> npm run bench:wire`): the top functions by self time
 * and the self time per area (agentd's runtime, server, stores; connect,
 * protobuf, pino, other packages; Node internals; GC). Idle time is left out
 * of the percentages. Also the agentd functions by total time (self plus
 * everything they called), each counted once per sample however often it
 * recurs on the stack.
 *
 * Usage: `tsx bench/wire/profile-summary.ts <file.cpuprofile>... [--top N]`
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  parent?: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The area a call frame's code belongs to. */
function areaOf(url: string, name: string): string {
  if (name === "(garbage collector)") return "GC";
  if (name === "(program)") return "(program: native, not JS)";
  if (url.includes("/node_modules/")) {
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? "?";
    return `package ${pkg}`;
  }
  if (url.startsWith("node:")) return "node internals";
  const repo = /\/(?:dist\/)?(src\/[^/]+|stores|gen)\/[^/]/.exec(url)?.[1];
  if (repo) return `agentd ${repo}`;
  return url ? "other" : "(native)";
}

function main(argv: string[]): void {
  const topIndex = argv.indexOf("--top");
  const top = topIndex >= 0 ? Number(argv[topIndex + 1]) : 30;
  const files = argv.filter((a, i) => a.endsWith(".cpuprofile") && (topIndex < 0 || i !== topIndex + 1));
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    for (const node of profile.nodes) for (const child of node.children ?? []) nodes.get(child)!.parent = node.id;
    for (let i = 0; i < profile.samples.length; i++) {
      const node = nodes.get(profile.samples[i]!)!;
      const { functionName, url } = node.callFrame;
      if (functionName === "(idle)") continue;
      const dt = profile.timeDeltas[i] ?? 0;
      total += dt;
      const key = frameKey(node);
      byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
      const onStack = new Set<string>();
      for (
        let at: ProfileNode | undefined = node;
        at;
        at = at.parent === undefined ? undefined : nodes.get(at.parent)
      ) {
        if (areaOf(at.callFrame.url, at.callFrame.functionName).startsWith("agentd ")) onStack.add(frameKey(at));
      }
      for (const k of onStack) inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
      const area = areaOf(url, functionName);
      byArea.set(area, (byArea.get(area) ?? 0) + dt);
    }
  }
  const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
  console.log(`${files.length} profile(s), ${(total / 1e6).toFixed(2)} s busy (idle excluded)\n\nself time by area:`);
  for (const [area, us] of [...byArea].sort((a, b) => b[1] - a[1])) console.log(`${pct(us)}  ${area}`);
  console.log(`\ntop ${top} functions by self time:`);
  for (const [key, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${key}`);
  console.log(`\ntop ${top} agentd functions by total time (self and callees):`);
  for (const [key, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${key}`);
}

/** "function  file:line", the file relative to node_modules or the checkout. */
function frameKey(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const short = url
    .replace(/^.*\/node_modules\//, "")
    .replace(/^file:\/\/.*?\/(dist\/)?(?=(src|stores|gen|bench)\/)/, "");
  return `${functionName || "(anonymous)"}  ${short}${url ? `:${lineNumber + 1}` : ""}`;
}

main(process.argv.slice(2));
