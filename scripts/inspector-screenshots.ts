// `npm run inspector:screenshots`: starts `agentd serve --inspector` on the
// memory store, seeds a few sessions (a task list with a branch, a detached
// job, a chat), and saves PNGs of the inspector's main views in docs/images/
// with Debian's chromium (test/harness/browser.ts), for docs/inspector.md and
// the README. Prints the page's load timing.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createAgentClient, userText } from "../src/client/index.js";
import { REPO_ROOT, startAgentd } from "../test/harness/agentd-process.js";
import { launchBrowser } from "../test/harness/browser.js";

const OUT = join(REPO_ROOT, "docs/images");

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const server = await startAgentd({ args: ["--inspector", "--store", "memory:"] });
  const browser = await launchBrowser();
  try {
    const client = createAgentClient(server.baseUrl);
    const labels = { team: "docs", env: "demo" };
    let sessionId = "";
    const snapshots: string[] = [];
    for (const text of ["write the release notes", "review the inspector PR", "done 1"]) {
      const output = await client.run("tasks", text, sessionId ? { sessionId } : { labels });
      sessionId = output.sessionId;
      snapshots.push(output.snapshotId!);
    }
    await client.run("tasks", "book the team dinner", { snapshotId: snapshots[1]! });
    for (const text of ["What can you do?", "Summarise our chat"]) await client.run("assistant", text, { labels });
    const words = Array.from({ length: 60 }, (_, i) => `step${i}`).join(" ");
    const job = await client.run("assistant", {
      message: userText(`Long research task: ${words}`, { echoDelayMs: 300 }),
      detach: true,
    });

    const page = await browser.newPage();
    const shot = async (path: string, selector: string, file: string, fullPage = false): Promise<void> => {
      await page.goto(`${server.baseUrl}${path}`);
      await page.locator(selector).first().waitFor();
      await page.waitForTimeout(300);
      await page.screenshot({ path: join(OUT, file), fullPage });
      console.log(`docs/images/${file}`);
    };
    await shot("/inspector/", "table.sessions-table", "inspector-sessions.png");
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      return { domContentLoadedMs: Math.round(nav.domContentLoadedEventEnd), loadMs: Math.round(nav.loadEventEnd) };
    });
    await shot(`/inspector/sessions/${sessionId}/snapshots/${snapshots[2]}`, ".diff li", "inspector-session.png", true);
    await shot(
      `/inspector/sessions/${job.sessionId}/snapshots/${job.snapshotId}`,
      ".live .chunk",
      "inspector-live.png",
      true,
    );
    await page.goto(`${server.baseUrl}/inspector/chat`);
    await page.selectOption("select[name=agent]", "tasks");
    for (const text of ["water the plants", "done 1"]) {
      await page.fill("textarea[name=message]", text);
      await page.click(".chat-form button[type=submit]");
      await page
        .locator(".turn .turn-output")
        .nth(text === "done 1" ? 1 : 0)
        .waitFor();
    }
    await page.screenshot({ path: join(OUT, "inspector-chat.png") });
    console.log("docs/images/inspector-chat.png");
    console.log(`page load: ${JSON.stringify(timing)}`);
  } finally {
    await browser.close();
    await server.stop();
  }
}

await main();
