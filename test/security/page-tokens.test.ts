import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { clientWithToken, writeTokensFile } from "../harness/auth-clients.js";
import { startAgentd, type AgentdProcess } from "../harness/agentd-process.js";
import { failure } from "../harness/call-failure.js";
import { textInput } from "../harness/wire-chat.js";

const ACME = "acme-token-0123456789abcdef012345";
const GLOBEX = "globex-token-0123456789abcdef0123";

/** `token` with one character of its signature changed (its cursor intact, so only the signature check refuses it). */
function tampered(token: string): string {
  const i = token.length - 5;
  return token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
}

describe("ListSessions and ListSnapshots page tokens are signed", () => {
  let server: AgentdProcess;
  let sessionId: string;
  beforeAll(async () => {
    server = await startAgentd({
      args: ["--store", "memory:", "--auth-tokens", writeTokensFile([`${ACME} acme`, `${GLOBEX} globex`])],
    });
    const acme = clientWithToken(server.baseUrl, ACME);
    for (let i = 0; i < 3; i++) {
      const { output } = await acme.run({ init: { agent: "assistant" }, input: textInput(`turn ${i}`) });
      sessionId = output!.sessionId;
    }
    await acme.run({ init: { agent: "assistant", sessionId }, input: textInput("again") });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const firstSessionsPage = () => clientWithToken(server.baseUrl, ACME).listSessions({ pageSize: 1 });

  it("pages through the sessions with the tokens it hands out", async () => {
    const acme = clientWithToken(server.baseUrl, ACME);
    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await acme.listSessions({ pageSize: 1, pageToken });
      seen.push(...page.sessions.map((s) => s.sessionId));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(new Set(seen).size).toBe(3);
  });

  it("refuses a ListSessions page token with one character changed: INVALID_ARGUMENT", async () => {
    const { nextPageToken } = await firstSessionsPage();
    const err = await failure(() =>
      clientWithToken(server.baseUrl, ACME).listSessions({ pageSize: 1, pageToken: tampered(nextPageToken) }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain("page_token");
  });

  it("refuses the store's unsigned cursor (the token without its signature)", async () => {
    const { nextPageToken } = await firstSessionsPage();
    const cursor = Buffer.from(nextPageToken.split(".")[0]!, "base64url").toString("utf8");
    const err = await failure(() =>
      clientWithToken(server.baseUrl, ACME).listSessions({ pageSize: 1, pageToken: cursor }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });

  it("refuses another tenant's ListSessions page token", async () => {
    const { nextPageToken } = await firstSessionsPage();
    const err = await failure(() =>
      clientWithToken(server.baseUrl, GLOBEX).listSessions({ pageSize: 1, pageToken: nextPageToken }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });

  it("refuses a ListSessions page token with other filters than the page that issued it", async () => {
    const { nextPageToken } = await firstSessionsPage();
    const err = await failure(() =>
      clientWithToken(server.baseUrl, ACME).listSessions({ pageSize: 1, pageToken: nextPageToken, agent: "tasks" }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });

  it("pages ListSnapshots with its tokens and refuses one changed", async () => {
    const acme = clientWithToken(server.baseUrl, ACME);
    const first = await acme.listSnapshots({ agent: "assistant", sessionId, pageSize: 1 });
    expect(first.nextPageToken).not.toBe("");
    const second = await acme.listSnapshots({
      agent: "assistant",
      sessionId,
      pageSize: 1,
      pageToken: first.nextPageToken,
    });
    expect(second.snapshots[0]?.snapshotId).not.toBe(first.snapshots[0]?.snapshotId);
    const err = await failure(() =>
      acme.listSnapshots({ agent: "assistant", sessionId, pageSize: 1, pageToken: tampered(first.nextPageToken) }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });
});

describe("--page-token-secret-file", () => {
  it("makes page tokens survive a restart (every instance sharing the secret accepts them); without it they do not", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentd-page-tokens-"));
    const secretFile = join(dir, "page-secret");
    writeFileSync(secretFile, "0123456789abcdef0123456789abcdef-shared\n");
    const store = `sqlite:${join(dir, "agentd.db")}`;
    const start = (secret: boolean) =>
      startAgentd({ args: ["--store", store, ...(secret ? ["--page-token-secret-file", secretFile] : [])] });

    let server = await start(true);
    const client = () => clientWithToken(server.baseUrl, undefined);
    for (let i = 0; i < 2; i++) await client().run({ init: { agent: "assistant" }, input: textInput(`s${i}`) });
    const { nextPageToken } = await client().listSessions({ pageSize: 1 });
    await server.stop();

    server = await start(true);
    try {
      expect((await client().listSessions({ pageSize: 1, pageToken: nextPageToken })).sessions).toHaveLength(1);
    } finally {
      await server.stop();
    }
    server = await start(false);
    try {
      const err = await failure(() => client().listSessions({ pageSize: 1, pageToken: nextPageToken }));
      expect(err.code).toBe(Code.InvalidArgument);
    } finally {
      await server.stop();
    }
  });
});
