// .prompt-backed agents over the wire: definePromptAgent in a module, `serve --prompts`, start-up smoke checks.
import { describe, expect, it } from "vitest";
import { StateManagement } from "../../gen/ts/agentd/v1/agent_pb.js";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import { REPO_ROOT, startAgentd } from "../harness/agentd-process.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { useAgentd } from "../harness/use-agentd.js";
import { agentServiceClient } from "../harness/wire-clients.js";

const agentd = useAgentd({ args: ["test/fixtures/prompt-agents.ts"] });

async function reply(agent: string, text: string): Promise<string> {
  const chat = new WireChat(agentd.client, { init: { agent }, input: textInput(text) });
  const turn = await chat.nextTurn();
  expect(turn.turnEnd.finishReason).toBe(FinishReason.STOP);
  await chat.finish();
  return chunksText(turn.chunks);
}

/** The start-up failure output of `serve <args>` (the process must exit before listening). */
async function startupFailure(args: string[]): Promise<string> {
  const err = await startAgentd({ args }).then(
    async (started) => {
      await started.stop();
      throw new Error("agentd started, but it should have refused");
    },
    (e: Error) => e,
  );
  expect(err.message).toContain("exited with code 2");
  return err.message;
}

describe("prompt agents from .prompt files", () => {
  it("the prompt named like the agent renders with its front matter's default input", async () => {
    expect(await reply("chat", "hi")).toBe(
      "scripted: hi\n(system: You are a helpful assistant. Keep responses concise.)",
    );
  });

  it("one named prompt backs two agents, each rendering its own input", async () => {
    expect(await reply("pirate", "ahoy")).toBe(
      "scripted: ahoy\n(system: You are a sarcastic pirate. Keep responses concise.)",
    );
    expect(await reply("butler", "tea")).toBe(
      "scripted: tea\n(system: You are a formal butler. Keep responses concise.)",
    );
  });

  it("the prompt renders every turn of a multi-turn conversation", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "pirate" }, input: textInput("one") });
    await chat.nextTurn();
    chat.sendText("two");
    expect(chunksText((await chat.nextTurn()).chunks)).toContain("(system: You are a sarcastic pirate.");
    await chat.finish();
  });

  it("ListAgents describes a prompt agent with its front matter's description", async () => {
    const { agents } = await agentd.client.listAgents({});
    expect(agents.find((a) => a.name === "chat")?.description).toBe("Chats in a configurable personality.");
  });
});

describe("agentd serve --prompts", () => {
  it("serves every .prompt file as a server-managed agent named after the file", async () => {
    const prompts = await startAgentd({ args: ["--prompts", "test/fixtures/prompts"] });
    try {
      const promptsClient = agentServiceClient(prompts.baseUrl, "connect-h1");
      const { agents } = await promptsClient.listAgents({});
      expect(agents.find((a) => a.name === "chat")?.stateManagement).toBe(StateManagement.SERVER);
      const { output } = await promptsClient.run({ init: { agent: "chat" }, input: textInput("hello") });
      expect(output?.snapshotId).not.toBe("");
      expect(output?.message?.content[0]?.kind.value).toBe(
        "scripted: hello\n(system: You are a helpful assistant. Keep responses concise.)",
      );
    } finally {
      await prompts.stop();
    }
  });

  it("refuses to start when a prompt's default input fails its input schema, naming the file", async () => {
    const output = await startupFailure(["--prompts", "test/fixtures/bad-prompts"]);
    expect(output).toContain(`${REPO_ROOT}test/fixtures/bad-prompts/strict.prompt`);
    expect(output).toContain("count");
  });
});

describe("start-up smoke checks of definePromptAgent", () => {
  it("a missing prompt stops the start, naming the file it looked for", async () => {
    const output = await startupFailure(["test/fixtures/missing-prompt-agent.ts"]);
    expect(output).toContain(`prompt "nope" not found: no file ${REPO_ROOT}test/fixtures/prompts/nope.prompt`);
  });

  it("an input failing the prompt's input schema stops the start, naming the file and field", async () => {
    const output = await startupFailure(["test/fixtures/bad-input-prompt-agent.ts"]);
    expect(output).toContain(`${REPO_ROOT}test/fixtures/prompts/chat.prompt`);
    expect(output).toContain("input fails the prompt's input schema: personality");
  });
});
