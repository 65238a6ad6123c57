// The inspector on a server with --auth-tokens, in a real browser: it asks for
// a token, and every view is scoped to that token's tenant like any call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createAgentClient } from "../../src/client/index.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { bearer, writeTokensFile } from "../harness/auth-clients.js";
import { launchBrowser, type TestBrowser } from "../harness/browser.js";

const TOKEN_A = "inspector-tenant-a-0123456789abcdef";
const TOKEN_B = "inspector-tenant-b-0123456789abcdef";

let server: AgentdProcess;
let browser: TestBrowser;
let page: Page;
let sessionOfA: string;

beforeAll(async () => {
  const tokens = writeTokensFile([`${TOKEN_A} tenant-a alice`, `${TOKEN_B} tenant-b bob`]);
  [server, browser] = await Promise.all([
    startAgentd({ args: ["--inspector", "--auth-tokens", tokens] }),
    launchBrowser(),
  ]);
  const a = createAgentClient(server.baseUrl, {
    transport: createGrpcTransport({ baseUrl: server.baseUrl, interceptors: [bearer(TOKEN_A)] }),
  });
  sessionOfA = (await a.run("tasks", "tenant A's private task")).sessionId;
  page = await browser.newPage();
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Opens `path`, gives `token` in the token form and waits for `selector`. */
async function openWithToken(path: string, token: string, selector: string): Promise<void> {
  await page.goto(`${server.baseUrl}${path}`);
  await page.locator(".token-form").waitFor();
  await page.fill("input[name=token]", token);
  await page.click(".token-form button[type=submit]");
  await page.locator(selector).first().waitFor();
}

describe("the inspector with --auth-tokens", () => {
  it("asks for a token before showing anything", async () => {
    await page.goto(`${server.baseUrl}/inspector/`);
    await page.locator(".token-form").waitFor();
    expect(await page.locator(".sessions").count()).toBe(0);
  });

  it("shows tenant B none of tenant A's sessions, in the list or by deep link", async () => {
    await openWithToken("/inspector/", TOKEN_B, ".sessions .empty");
    expect(await page.locator(`tr[data-session-id="${sessionOfA}"]`).count()).toBe(0);
    await openWithToken(`/inspector/sessions/${sessionOfA}`, TOKEN_B, ".session .error");
    expect(await page.locator(".session .error").textContent()).toMatch(/^NotFound: /);
    expect(await page.locator(".message").count()).toBe(0);
  });

  it("shows tenant A its session with the token of tenant A", async () => {
    await openWithToken(`/inspector/sessions/${sessionOfA}`, TOKEN_A, ".message");
    expect(await page.locator(".message .part-text").first().textContent()).toBe("tenant A's private task");
  });

  it("refuses a wrong token and asks again", async () => {
    await openWithToken("/inspector/", "not-a-valid-token-0123456789", ".token-form .error");
    expect(await page.locator(".token-form .error").textContent()).toMatch(/^Unauthenticated: /);
  });

  it("keeps the token in memory only: a reload asks again and nothing is stored", async () => {
    await openWithToken("/inspector/", TOKEN_A, ".sessions-table");
    const stored = await page.evaluate(() => ({
      local: localStorage.length,
      session: sessionStorage.length,
      cookie: document.cookie,
    }));
    expect(stored).toEqual({ local: 0, session: 0, cookie: "" });
    await page.reload();
    await page.locator(".token-form").waitFor();
  });
});
