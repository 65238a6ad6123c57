// History policy of prompt agents (issue 41 item 4) over the wire: a real agentd serving
// test/fixtures/prompt-agents.ts. The scripted model records on each reply how many
// messages its request held (metadata.requestMessages): what the model was sent.
import { describe, expect, it } from "vitest";
import { snapshotFromWire } from "../../src/protocol/index.js";
import type { Message } from "../../src/types/content.js";
import { textInput, WireChat } from "../harness/wire-chat.js";
import { useAgentd } from "../harness/use-agentd.js";

const agentd = useAgentd({ args: ["test/fixtures/prompt-agents.ts"] });

/** Runs `texts` as the turns of one new session of `agent`; its last snapshot's full history. */
async function conversation(agent: string, texts: string[]): Promise<Message[]> {
  const chat = new WireChat(agentd.client, { init: { agent } });
  let snapshotId = "";
  for (const text of texts) {
    chat.sendText(text);
    snapshotId = (await chat.nextTurn()).turnEnd.snapshotId;
  }
  await chat.finish();
  const { snapshot } = await agentd.client.getSnapshot({ agent, snapshotId });
  return snapshotFromWire(snapshot!).state!.messages;
}

/** How many messages the model was sent for each model message of `history` (system prompt included). */
function sentCounts(history: Message[]): number[] {
  return history.filter((m) => m.role === "model").map((m) => m.metadata?.["requestMessages"] as number);
}

describe("history policy", () => {
  it("the model receives at most maxMessages of history (plus the system prompt) while GetSnapshot shows all of it", async () => {
    const history = await conversation("brief", ["1", "2", "3", "4", "5", "6"]);
    expect(history).toHaveLength(12);
    expect(history.filter((m) => m.role === "user").map((m) => m.content[0]?.text)).toEqual([
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
    ]);
    // Before turn k's call the history holds 2k-1 messages; the model gets the newest 4 + the system prompt.
    expect(sentCounts(history)).toEqual([2, 4, 5, 5, 5, 5]);
  });

  it("sends the current turn's user message and its tool round whole, even past the limit", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "bounded" }, input: textInput("hello") });
    await chat.nextTurn();
    chat.sendText("call balance {}");
    const { turnEnd } = await chat.nextTurn();
    await chat.finish();
    const { snapshot } = await agentd.client.getSnapshot({ agent: "bounded", snapshotId: turnEnd.snapshotId });
    const history = snapshotFromWire(snapshot!).state!.messages;
    expect(history.map((m) => m.role)).toEqual(["user", "model", "user", "model", "tool", "model"]);
    // bounded.prompt's front matter: history maxMessages 2. The tool round's second call is sent
    // user + model(tool request) + tool(response): 3 messages, plus the system prompt.
    expect(sentCounts(history)).toEqual([2, 3, 4]);
  });
});

describe("history policy, mode summarize", () => {
  it("sends a summary of the left-out messages, made once and reused from the history until more is left out", async () => {
    const history = await conversation("digest", ["1", "2", "3", "4", "5", "6", "7", "8"]);
    expect(history).toHaveLength(16);
    const replies = history.filter((m) => m.role === "model");
    // Left out from turn 3 on; summaries are made at turns 3, 5 and 7 (cached on that turn's reply), reused at 4, 6, 8.
    const made = replies.map((m, i) => (m.metadata?.["agentd.historySummary"] ? i + 1 : 0)).filter((t) => t > 0);
    expect(made).toEqual([3, 5, 7]);
    const texts = replies.map((m) => m.content[0]?.text ?? "");
    expect(texts.slice(0, 2).some((t) => t.includes("Summary of the earlier conversation"))).toBe(false);
    expect(texts.slice(2).every((t) => t.includes("Summary of the earlier conversation"))).toBe(true);
    // The last summary builds on the earlier ones: it still covers turns 1 and 2.
    expect(texts[7]).toContain("S[1,2]");
    expect(texts[7]).toContain("5,6]");
    expect(sentCounts(history).at(-1)).toBeLessThanOrEqual(1 + 1 + 4);
  });
});
