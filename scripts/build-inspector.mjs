// Builds the inspector (src/inspector/): one minified ES module bundle by
// esbuild, its stylesheet and index.html. `npm run build` writes them to
// dist/inspector/ (shipped in the npm package); `agentd serve --inspector`
// run from the sources calls buildInspector() itself and serves the result
// from memory, so a checkout never serves a stale build.
//
//   node scripts/build-inspector.mjs [outdir]   (default dist/inspector)
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SOURCE = join(ROOT, "src/inspector");

/**
 * The inspector's files by their path under /inspector/: `index.html`,
 * `assets/inspector.js` and `assets/inspector.css`. Needs esbuild (a dev
 * dependency of the checkout).
 * @returns {Promise<Map<string, Uint8Array>>}
 */
export async function buildInspector() {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [join(SOURCE, "main.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "none",
    write: false,
    outfile: "inspector.js",
    logLevel: "silent",
  });
  const files = new Map();
  files.set("index.html", await readFile(join(SOURCE, "index.html")));
  files.set("assets/inspector.js", result.outputFiles[0].contents);
  files.set("assets/inspector.css", await readFile(join(SOURCE, "inspector.css")));
  return files;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outdir = process.argv[2] ?? join(ROOT, "dist/inspector");
  const files = await buildInspector();
  for (const [name, contents] of files) {
    await mkdir(dirname(join(outdir, name)), { recursive: true });
    await writeFile(join(outdir, name), contents);
  }
  const js = files.get("assets/inspector.js");
  const { gzipSync } = await import("node:zlib");
  console.log(`inspector: ${outdir} (inspector.js ${js.length} bytes, ${gzipSync(js).length} gzipped)`);
}
