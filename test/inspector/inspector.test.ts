// The inspector in a real browser (Debian's chromium driven by playwright-core)
// against a real `agentd serve --inspector` process: every view, reached by
// clicking or by deep link, showing what the seeding calls (the Node client)
// wrote. The tenant scoping with --auth-tokens is in inspector-auth.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { Code, ConnectError } from "@connectrpc/connect";
import { createAgentClient, userText, type AgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { launchBrowser, type TestBrowser } from "../harness/browser.js";
import { INSPECTOR_CSP } from "../../src/server/inspector-route.js";

let server: AgentdProcess;
let client: AgentClient;
let browser: TestBrowser;
let page: Page;
/** Console messages of every page (CSP violations are reported there). */
const consoleMessages: string[] = [];

beforeAll(async () => {
  [server, browser] = await Promise.all([
    startAgentd({
      args: [
        "test/fixtures/prompt-agents.ts",
        "test/fixtures/agents.ts",
        "--inspector",
        "--heartbeat-interval-ms",
        "100",
      ],
    }),
    launchBrowser(),
  ]);
  client = createAgentClient(server.baseUrl);
  browser.context.on("console", (message) => consoleMessages.push(message.text()));
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Runs `texts` as turns of a new `tasks` session labelled `test=<label>`; the turn-end snapshot IDs in order. */
async function tasksSession(label: string, texts: string[]): Promise<{ sessionId: string; snapshots: string[] }> {
  let sessionId = "";
  const snapshots: string[] = [];
  for (const text of texts) {
    const output = await client.run("tasks", text, sessionId ? { sessionId } : { labels: { test: label } });
    sessionId = output.sessionId;
    snapshots.push(output.snapshotId!);
  }
  return { sessionId, snapshots };
}

/** Starts detached work on a new `assistant` session: echoes `words` words, `delayMs` apart; its pending snapshot. */
async function detachedJob(words: number, delayMs: number): Promise<{ sessionId: string; snapshotId: string }> {
  const text = Array.from({ length: words }, (_, i) => `word${i}`).join(" ");
  const output = await client.run("assistant", { message: userText(text, { echoDelayMs: delayMs }), detach: true });
  expect(output.finishReason).toBe("detached");
  return { sessionId: output.sessionId, snapshotId: output.snapshotId! };
}

/** Opens a URL path of the server in the page and waits until the page's scripts showed `selector`. */
async function open(path: string, selector: string): Promise<void> {
  await page.goto(`${server.baseUrl}${path}`);
  await page.locator(selector).first().waitFor();
}

/** The sessions list filtered by `label`: types the filter and submits it. */
async function filterByLabel(label: string): Promise<void> {
  await open("/inspector/", "form.filters");
  await page.fill("input[name=labels]", `test=${label}`);
  await page.click("form.filters button[type=submit]");
}

describe("the inspector", () => {
  it("lists the caller's sessions on a loopback server without asking for a token, and opens one by clicking it", async () => {
    const { sessionId } = await tasksSession("list", ["buy milk"]);
    await filterByLabel("list");
    const row = page.locator(`tr[data-session-id="${sessionId}"]`);
    await row.waitFor();
    expect(await row.locator("td").nth(1).textContent()).toBe("tasks");
    expect(await row.locator("td").nth(2).textContent()).toBe("1");
    expect(await page.locator(".token-form").count()).toBe(0);
    await row.locator("a").click();
    await page.locator(".session-id").waitFor();
    expect(new URL(page.url()).pathname).toBe(`/inspector/sessions/${sessionId}`);
    expect(await page.locator(".session-id").textContent()).toBe(sessionId);
  });

  it("draws a session's snapshots as a tree where a run from an older snapshot is a second branch, the head marked", async () => {
    const { sessionId, snapshots } = await tasksSession("tree", ["a", "b"]);
    const branch = await client.run("tasks", "c", { snapshotId: snapshots[0]! });
    await open(`/inspector/sessions/${sessionId}`, ".snapshot-tree");
    const fork = page.locator(`.snapshot-tree li[data-snapshot-id="${snapshots[0]}"]`);
    expect(await fork.getAttribute("class")).toBe("branch-point");
    expect(await fork.locator(":scope > .branch-mark").textContent()).toBe("2 branches");
    const children = await fork
      .locator(":scope > ul > li")
      .evaluateAll((lis) => lis.map((li) => li.getAttribute("data-snapshot-id")));
    expect(children).toEqual([snapshots[1], branch.snapshotId]);
    expect(await page.locator(`li[data-snapshot-id="${branch.snapshotId}"] > .head-mark`).count()).toBe(1);
    expect(await page.locator(".head-mark").count()).toBe(1);
  });

  it("shows a snapshot's custom state with what changed from its parent", async () => {
    const { sessionId, snapshots } = await tasksSession("diff", ["first task", "second task"]);
    await open(`/inspector/sessions/${sessionId}/snapshots/${snapshots[1]}`, ".diff");
    const changes = await page.locator(".diff li").evaluateAll((lis) => lis.map((li) => li.textContent));
    expect(changes).toEqual(["/nextId changed2 → 3", '/tasks/1 added{"id":2,"title":"second task","done":false}']);
    expect(JSON.parse((await page.locator(".json-state").textContent())!)).toEqual({
      tasks: [
        { id: 1, title: "first task", done: false },
        { id: 2, title: "second task", done: false },
      ],
      nextId: 3,
    });
  });

  it("attaches to a pending job's stream and shows its chunks until it ends completed", async () => {
    const job = await detachedJob(12, 200);
    await open(`/inspector/sessions/${job.sessionId}/snapshots/${job.snapshotId}`, ".live");
    await page.locator('.live-status [data-status="completed"]').waitFor({ timeout: 20_000 });
    await page.locator(".live .chunk.output").waitFor();
    const log = await page.locator(".live .chunk").evaluateAll((els) => els.map((el) => el.textContent ?? ""));
    expect(log.some((line) => line.includes("word11"))).toBe(true);
    expect(log.some((line) => line.includes("turn end: turn 0, finish stop"))).toBe(true);
    expect(log.at(-1)).toBe("output: finish stop");
    expect((await client.getSnapshot("assistant", { snapshotId: job.snapshotId })).status).toBe("completed");
  });

  it("aborts a pending job with the Abort button", async () => {
    const job = await detachedJob(40, 1000);
    await open(`/inspector/sessions/${job.sessionId}/snapshots/${job.snapshotId}`, ".live .abort");
    await page.click(".live .abort");
    await page.locator('.live-status [data-status="aborted"]').waitFor({ timeout: 20_000 });
    expect(await page.locator(".live-note").textContent()).toBe("Abort answered: aborted");
    expect((await client.getSnapshot("assistant", { snapshotId: job.snapshotId })).status).toBe("aborted");
  });

  it("runs a chat turn by RunStream, streams the reply and shows the turn's end, then continues the same session", async () => {
    await open("/inspector/chat", ".chat-form");
    await page.selectOption("select[name=agent]", "assistant");
    await page.fill("textarea[name=message]", "hello inspector");
    await page.click(".chat-form button[type=submit]");
    await page.locator(".turn .turn-output").first().waitFor();
    expect(await page.locator(".turn .streaming").first().textContent()).toBe("echo: hello inspector");
    expect(await page.locator(".turn .turn-output .badge").first().textContent()).toBe("stop");
    const sessionId = await page.inputValue("input[name=session]");
    expect(sessionId).not.toBe("");
    await page.fill("textarea[name=message]", "again");
    await page.click(".chat-form button[type=submit]");
    await page.locator(".turn .turn-output").nth(1).waitFor();
    const session = await client.getSession(sessionId);
    expect(session.turnCount).toBe(2);
  });

  it("continues a client-managed agent's chat from the state its last turn returned", async () => {
    await open("/inspector/chat", ".chat-form");
    await page.selectOption("select[name=agent]", "notes");
    for (const [i, text] of ["first note", "second note"].entries()) {
      await page.fill("textarea[name=message]", text);
      await page.click(".chat-form button[type=submit]");
      await page.locator(".turn .turn-output").nth(i).waitFor();
    }
    const patches = await page.locator('.turn .chunk[data-kind="patch"]').allTextContents();
    expect(patches.at(-1)).toContain('["first note","second note"]');
    expect(await page.locator(".turn .streaming").nth(1).textContent()).toBe("noted: second note");
  });

  it("answers a deep link to a session with its messages and snapshot IDs once the page's scripts ran", async () => {
    const { sessionId, snapshots } = await tasksSession("deep", ["one", "two"]);
    const fresh = await browser.newPage();
    try {
      await fresh.goto(`${server.baseUrl}/inspector/sessions/${sessionId}`);
      await fresh.locator(".message").first().waitFor();
      const ids = await fresh
        .locator(".snapshot-tree li")
        .evaluateAll((lis) => lis.map((li) => li.getAttribute("data-snapshot-id")));
      expect(ids).toEqual(snapshots);
      const texts = await fresh.locator(".message .part-text").allTextContents();
      expect(texts).toEqual(["one", "Added task #1: one", "two", "Added task #2: two"]);
      expect(await fresh.locator(".snapshot-id").textContent()).toBe(snapshots[1]);
    } finally {
      await fresh.close();
    }
  });

  it("shows markup and <script> in content as text: no element is created and no script runs", async () => {
    const hostile = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b>`;
    const { sessionId, snapshots } = await tasksSession("xss", [hostile]);
    await open(`/inspector/sessions/${sessionId}/snapshots/${snapshots[0]}`, ".message");
    expect(await page.locator(".message .part-text").first().textContent()).toBe(hostile);
    expect(await page.locator("main script, main img, main b").count()).toBe(0);
    expect(await page.locator(".json-state").textContent()).toContain("<script>window.__pwned = 1</script>");
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it("shows an interrupted turn's tool request marked as waiting for the client, and the finish reason", async () => {
    const output = await client.run("bank", 'call transfer {"amount":5,"to":"bob"}');
    expect(output.finishReason).toBe("interrupted");
    await open(`/inspector/sessions/${output.sessionId}`, ".part-interrupt");
    const model = page.locator('.message[data-role="model"]').last();
    expect(await model.locator(".part-tool-request").textContent()).toMatch(/^tool request → transfer/);
    expect(JSON.parse((await model.locator(".json pre").first().textContent())!)).toEqual({ amount: 5, to: "bob" });
    expect(await model.locator(".part-interrupt").textContent()).toBe("interrupt: waiting for the client's resume");
    expect(await model.locator(".part-tool-call").textContent()).toMatch(
      /^tool call [0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12} · started, no result journaled$/,
    );
    const facts = await page.locator(".snapshot-facts").textContent();
    expect(facts).toContain("Finish reasoninterrupted");
  });

  it("edits a session's labels and TTL from the list", async () => {
    const { sessionId } = await tasksSession("edit", ["x"]);
    await filterByLabel("edit");
    const row = page.locator(`tr[data-session-id="${sessionId}"]`);
    await row.locator("button", { hasText: "Edit" }).click();
    await page.fill("input[name=set-labels]", "team=blue");
    await page.fill("input[name=ttl]", "2h");
    await page.click("form.edit-session button[type=submit]");
    await page.locator(`tr[data-session-id="${sessionId}"] td.labels`, { hasText: "team=blue" }).waitFor();
    const session = await client.getSession(sessionId);
    expect(session.labels).toEqual({ test: "edit", team: "blue" });
    expect(session.ttlMs).toBe(2 * 3_600_000);
    expect(await row.locator("td").nth(6).textContent()).toBe("2h");
  });

  it("deletes a session only after the confirmation", async () => {
    const { sessionId } = await tasksSession("delete", ["x"]);
    await filterByLabel("delete");
    const row = page.locator(`tr[data-session-id="${sessionId}"]`);
    await row.locator("button", { hasText: "Delete" }).click();
    expect((await client.getSession(sessionId)).sessionId).toBe(sessionId);
    await page.click(".confirm-delete button.danger");
    await page.locator(".empty").waitFor();
    const err = await client.getSession(sessionId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("filters by agent and label and pages 20 sessions at a time", async () => {
    for (let i = 0; i < 21; i++) await client.run("assistant", `s${i}`, { labels: { test: "paging" } });
    await tasksSession("paging", ["not an assistant session"]);
    await open("/inspector/", "form.filters");
    await page.selectOption("select[name=agent]", "assistant");
    await page.fill("input[name=labels]", "test=paging");
    await page.click("form.filters button[type=submit]");
    await page.locator(".pager button", { hasText: "Next" }).and(page.locator(":not([disabled])")).waitFor();
    expect(await page.locator("tr[data-session-id]").count()).toBe(20);
    await page.click(".pager button:has-text('Next')");
    await page.locator(".pager", { hasText: "page 2" }).waitFor();
    expect(await page.locator("tr[data-session-id]").count()).toBe(1);
    expect(await page.locator(".pager button:has-text('Next')").isDisabled()).toBe(true);
  });

  it("answers a deep link with the page under a CSP allowing only same-origin scripts, and the page has no inline script", async () => {
    const response = await fetch(`${server.baseUrl}/inspector/sessions/some-id/snapshots/other-id`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("content-security-policy")).toBe(INSPECTOR_CSP);
    expect(INSPECTOR_CSP).toContain("script-src 'self';");
    expect(INSPECTOR_CSP).not.toMatch(/unsafe-inline|unsafe-eval/);
    const html = await response.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map(([, attrs, body]) => ({ src: /src="([^"]+)"/.exec(attrs!)?.[1], body }))).toEqual([
      { src: "/inspector/assets/inspector.js", body: "" },
    ]);
    expect(html).not.toMatch(/\son[a-z]+=/i);
  });

  // How fast is for benchmarks: this reports the timing and asserts the page loaded and listed.
  it("loads and lists sessions (navigation timing reported)", async () => {
    const started = Date.now();
    await open("/inspector/", "table.sessions-table, .empty");
    const listedMs = Date.now() - started;
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      return { domContentLoadedMs: nav.domContentLoadedEventEnd, loadMs: nav.loadEventEnd };
    });
    console.log(`inspector page load: ${JSON.stringify({ ...timing, listedMs })}`);
    expect(timing.loadMs).toBeGreaterThan(0);
  });

  // Last: it checks every request and console message of the tests above.
  it("made no request to another origin and hit no CSP violation in any test", () => {
    const origin = new URL(server.baseUrl).origin;
    expect(browser.requests.length).toBeGreaterThan(30);
    expect(browser.requests.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);
    expect(consoleMessages.filter((m) => /Content Security Policy|Refused to/i.test(m))).toEqual([]);
  });
});
