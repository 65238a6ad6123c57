import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

/** Debian's chromium (apt install chromium): the browser the inspector's tests drive; never downloaded. */
export const CHROMIUM = process.env.AGENTD_CHROMIUM ?? "/usr/bin/chromium";

/** Flags for a quiet, offline, sandbox-less headless chromium (CI containers run as root). */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless chromium with a fresh profile, recording every request its pages make. */
export interface TestBrowser {
  readonly context: BrowserContext;
  /** The URL of every request any page made, in order. */
  readonly requests: string[];
  /** A new page (tab). */
  newPage(): Promise<Page>;
  /** Closes the browser and deletes its profile. */
  close(): Promise<void>;
}

/**
 * Launches {@link CHROMIUM} (throws, saying how to install it, when it is
 * missing: the browser tests never skip silently) with a fresh user-data-dir.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the inspector's browser tests need chromium at ${CHROMIUM}: run scripts/install-chromium.sh (apt-get install -y chromium) or set AGENTD_CHROMIUM`,
    );
  }
  const profile = mkdtempSync(join(tmpdir(), "agentd-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  const requests: string[] = [];
  context.on("request", (request) => requests.push(request.url()));
  return {
    context,
    requests,
    newPage: () => context.newPage(),
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
