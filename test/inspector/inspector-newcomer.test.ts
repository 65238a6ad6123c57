// What a newcomer looks for in the inspector, in a real browser against a real
// `agentd serve --inspector`: a session's conversation in the chat view before
// continuing it, edits shown on forked snapshots, sessions listed with what
// they are about and their token usage, times with their zone, a pending job's
// inputs, and a session page that follows its detached work to its end.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { createAgentClient, userText, type AgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { launchBrowser, type TestBrowser } from "../harness/browser.js";

let server: AgentdProcess;
let client: AgentClient;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  [server, browser] = await Promise.all([
    startAgentd({ args: ["test/fixtures/agents.ts", "--inspector", "--heartbeat-interval-ms", "100"] }),
    launchBrowser(),
  ]);
  client = createAgentClient(server.baseUrl);
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function open(path: string, selector: string): Promise<void> {
  await page.goto(`${server.baseUrl}${path}`);
  await page.locator(selector).first().waitFor();
}

/** Runs `texts` as turns of one new `tasks` session with `labels`; its ID and turn-end snapshot IDs. */
async function tasksSession(
  labels: Record<string, string>,
  texts: string[],
): Promise<{ sessionId: string; snapshots: string[] }> {
  let sessionId = "";
  const snapshots: string[] = [];
  for (const text of texts) {
    const output = await client.run("tasks", text, sessionId ? { sessionId } : { labels });
    sessionId = output.sessionId;
    snapshots.push(output.snapshotId!);
  }
  return { sessionId, snapshots };
}

describe("the inspector for a newcomer", () => {
  it("shows an existing session's conversation in the chat view before continuing it", async () => {
    const { sessionId } = await tasksSession({ test: "history" }, ["water plants", "pay rent"]);
    await open(`/inspector/chat?agent=tasks&session=${sessionId}`, ".history .message");
    const texts = await page.locator(".history .message .part-text").allTextContents();
    expect(texts).toEqual(["water plants", "Added task #1: water plants", "pay rent", "Added task #2: pay rent"]);
    expect(await page.locator(".history h3").textContent()).toContain("4 messages");
    await page.fill("textarea[name=message]", "call mom");
    await page.click(".chat-form button[type=submit]");
    await page.locator(".transcript .turn .turn-output").first().waitFor();
    expect(await page.locator(".transcript .turn .streaming").first().textContent()).toBe("Added task #3: call mom");
    expect(await page.locator(".history .message").count()).toBe(4);
    expect((await client.getSession(sessionId)).turnCount).toBe(3);
  });

  it("shows the history of a session typed into the chat view, and an error for one that does not exist", async () => {
    const { sessionId } = await tasksSession({ test: "typed" }, ["sweep floor"]);
    await open("/inspector/chat", ".chat-form");
    await page.selectOption("select[name=agent]", "tasks");
    await page.fill("input[name=session]", sessionId);
    await page.locator("input[name=session]").dispatchEvent("change");
    await page.locator(".history .message").first().waitFor();
    expect(await page.locator(".history .message .part-text").first().textContent()).toBe("sweep floor");
    await page.fill("input[name=session]", "00000000-0000-7000-8000-000000000000");
    await page.locator("input[name=session]").dispatchEvent("change");
    await page.locator(".history .error").waitFor();
    expect(await page.locator(".history .error").textContent()).toMatch(/^NotFound: /);
  });

  it("shows who edited a forked snapshot's parent and each operation", async () => {
    const { sessionId, snapshots } = await tasksSession({ test: "edit" }, ["first"]);
    const patch = [{ op: "replace" as const, path: "/tasks/0/title", value: "first (edited)" }];
    const fork = await client.run("tasks", "second", { snapshotId: snapshots[0]!, statePatch: patch });
    await open(`/inspector/sessions/${sessionId}/snapshots/${fork.snapshotId}`, ".snapshot-edit");
    expect(await page.locator(".snapshot-edit .edit-by").textContent()).toBe(
      "forked from an edited copy of its parent by anonymous",
    );
    const target = page.locator('.snapshot-edit .edit-ops[data-target="custom state"]');
    expect(await target.locator("span").textContent()).toBe("custom state (1 operation)");
    expect(JSON.parse((await target.locator("li").textContent())!)).toEqual(patch[0]);
    await open(`/inspector/sessions/${sessionId}/snapshots/${snapshots[0]}`, ".snapshot-facts");
    expect(await page.locator(".snapshot-edit").count()).toBe(0);
  });

  it("lists sessions with their first user message, or their title label, and their token usage", async () => {
    const plain = await tasksSession({ test: "summary" }, ["plan the offsite", "book a room"]);
    const titled = await tasksSession({ test: "summary", title: "Quarterly planning" }, ["something else"]);
    await open("/inspector/", "form.filters");
    await page.fill("input[name=labels]", "test=summary");
    await page.click("form.filters button[type=submit]");
    const plainRow = page.locator(`tr[data-session-id="${plain.sessionId}"]`);
    await plainRow.locator("td.conversation", { hasText: "plan the offsite" }).waitFor();
    expect(await page.locator(`tr[data-session-id="${titled.sessionId}"] td.conversation`).textContent()).toBe(
      "Quarterly planning",
    );
    const session = await client.getSession(plain.sessionId);
    expect(await plainRow.locator("td.tokens").textContent()).toBe(
      session.usage ? String(session.usage.totalTokens) : "—",
    );
  });

  it("shows times with their time zone", async () => {
    const { sessionId } = await tasksSession({ test: "zone" }, ["x"]);
    await open(`/inspector/sessions/${sessionId}`, ".session-summary dl");
    const created = await page.locator(".session-summary dd").nth(3).textContent();
    expect(created).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|GMT[+-]\d+(:\d\d)?)$/);
  });

  it("shows a pending job's inputs: the one running and those queued behind it", async () => {
    const conversation = client.chat("assistant");
    // The first reply waits a minute before its first chunk: the job stays pending until aborted.
    const running = conversation.send({ message: userText("water the garden", { echoDelayMs: 60_000 }) });
    const queued = conversation.send("then feed the cat");
    const job = await conversation.detach("and lock the door");
    await expect(running.end).rejects.toMatchObject({ code: Code.Canceled });
    await expect(queued.end).rejects.toMatchObject({ code: Code.Canceled });
    await open(`/inspector/sessions/${job.sessionId}/snapshots/${job.snapshotId}`, ".pending-inputs");
    expect(await page.locator(".pending-inputs h4").textContent()).toBe("Inputs (3)");
    expect(await page.locator(".pending-input .part-text").allTextContents()).toEqual([
      "water the garden",
      "then feed the cat",
      "and lock the door",
    ]);
    const progress = await page.locator(".pending-input").evaluateAll((items) => items.map((i) => i.dataset.progress));
    expect(progress).toEqual(["running", "queued", "queued"]);
    expect(await page.locator(".snapshot h4", { hasText: /^Messages/ }).count()).toBe(0);
    expect(await client.abort("assistant", job.snapshotId!)).toBe("aborted");
  });

  it("updates a session's page when its detached work ends, without a reload", async () => {
    const words = Array.from({ length: 10 }, (_, i) => `w${i}`).join(" ");
    const job = await client.run("assistant", { message: userText(words, { echoDelayMs: 150 }), detach: true });
    expect(job.finishReason).toBe("detached");
    await open(`/inspector/sessions/${job.sessionId}`, ".snapshot-tree");
    expect(await page.locator(".session-summary .badge").first().getAttribute("data-status")).toBe("pending");
    await page
      .locator(`.snapshot-tree li[data-snapshot-id="${job.snapshotId}"] > .badge[data-status="completed"]`)
      .waitFor({ timeout: 30_000 });
    expect(await page.locator(".session-summary .badge").first().getAttribute("data-status")).toBe("completed");
  });
});
