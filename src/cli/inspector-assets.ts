import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { InspectorAssets } from "../server/inspector-route.js";

/** The inspector's files, as scripts/build-inspector.mjs names them. */
const ASSET_NAMES = ["index.html", "assets/inspector.js", "assets/inspector.css"];

/**
 * The inspector's files for `agentd serve --inspector`: in an installed
 * package the built ones in `dist/inspector/` (made by `npm run build`); in a
 * checkout run from the sources, a fresh in-memory build of `src/inspector/`
 * (scripts/build-inspector.mjs, with the checkout's esbuild). Throws an Error
 * saying how to get them when neither is there.
 */
export async function loadInspectorAssets(): Promise<InspectorAssets> {
  // From dist/src/cli/ this is dist/inspector/; from src/cli/ (sources) it does not exist.
  const built = new URL("../../inspector/", import.meta.url);
  if (existsSync(new URL("index.html", built))) {
    const files = new Map<string, Uint8Array>();
    for (const name of ASSET_NAMES) files.set(name, await readFile(new URL(name, built)));
    return files;
  }
  const script = new URL("../../scripts/build-inspector.mjs", import.meta.url);
  if (existsSync(script) && existsSync(new URL("../inspector/main.ts", import.meta.url))) {
    const { buildInspector } = (await import(script.href)) as { buildInspector(): Promise<InspectorAssets> };
    try {
      return await buildInspector();
    } catch (err) {
      throw new Error(
        `--inspector: building src/inspector failed (is esbuild installed? npm install): ${String(err)}`,
        {
          cause: err,
        },
      );
    }
  }
  throw new Error(
    "--inspector: the inspector's files are missing (dist/inspector/): this package was not built with npm run build",
  );
}
