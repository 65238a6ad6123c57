/**
 * Prints the structure figures of the library (src/, stores/, examples/):
 * lines, rooms (files), floors (layers from architecture-layers.mjs), arrows
 * (file-to-file imports), arrows running back up (imports the layer rule
 * forbids) and circles (import cycles between files). `npm run house`.
 * With `--check` (part of `npm run lint`) it exits 1 when an arrow runs back
 * up or a circle exists, so neither comes back unnoticed.
 */
import { readdirSync, readFileSync, statSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { LAYERS } from "./architecture-layers.mjs";

const root = resolve(import.meta.dirname, "..");
const scanned = ["src", "stores", "examples"];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : [];
  });
}

/** `folder/**` places every file under the folder; a bare `folder` only the files directly in it. */
function globToRegExp(glob: string): RegExp {
  const escaped = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  if (!glob.includes("*")) return new RegExp(`^${escaped}/[^/]+$`);
  return new RegExp(`^${escaped.replace(/\*\*/g, "<any>").replace(/\*/g, "[^/]*").replace(/<any>/g, ".*")}$`);
}

const layerMatchers = LAYERS.map((layer) => ({
  ...layer,
  patterns: [layer.pattern].flat().map(globToRegExp),
}));

function layerOf(file: string): (typeof layerMatchers)[number] | undefined {
  return layerMatchers.find((layer) => layer.patterns.some((p) => p.test(file)));
}

function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles
    .map((ref) => ref.fileName)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => relative(root, resolve(root, dirname(file), spec)).replace(/\.js$/, ".ts"))
    .filter((target) => existsSync(join(root, target)));
}

/** Strongly connected components with more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indices.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, indices.get(next)!));
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

const files = scanned
  .flatMap((dir) => sourceFiles(join(root, dir)))
  .map((f) => relative(root, f))
  .sort();
const graph = new Map(files.map((file) => [file, importsOf(file).filter((t) => !t.startsWith("gen/"))]));
const lines = files.reduce((sum, f) => sum + readFileSync(join(root, f), "utf8").split("\n").length - 1, 0);
const arrows = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
const floors = new Set(files.map((f) => layerOf(f)?.type ?? `unplaced:${dirname(f)}`));
const upward: string[] = [];
for (const [file, targets] of graph) {
  const from = layerOf(file);
  for (const target of targets) {
    const to = layerOf(target);
    if (!from || !to) continue;
    if (from.type !== to.type && !from.allow.includes(to.type)) upward.push(`${file} → ${target}`);
  }
}
const cycles = circles(graph);
const largest = files.map((f) => [f, readFileSync(join(root, f), "utf8").split("\n").length - 1] as const);
largest.sort((a, b) => b[1] - a[1]);

console.log(`lines   ${lines}`);
console.log(`rooms   ${files.length} files (largest: ${largest[0]?.[0]} ${largest[0]?.[1]} lines)`);
console.log(`floors  ${floors.size} (${[...floors].join(", ")})`);
console.log(`arrows  ${arrows} imports between files`);
console.log(`up      ${upward.length} arrows running back up`);
for (const arrow of upward) console.log(`          ${arrow}`);
console.log(`circles ${cycles.length}`);
for (const cycle of cycles) console.log(`          ${cycle.join(" ⇄ ")}`);
if (process.argv.includes("--check") && (upward.length > 0 || cycles.length > 0)) {
  console.error(
    "house check failed: break each circle (move the shared type into a file of its own) and point every arrow down the floors",
  );
  process.exit(1);
}
