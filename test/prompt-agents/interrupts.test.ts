// Interrupting tools and AgentInput.resume over the wire (test/fixtures/prompt-agents.ts: bank, bank-client).
import { describe, expect, it } from "vitest";
import { FinishReason } from "../../gen/ts/agentd/v1/state_pb.js";
import type { AgentOutput as WireOutput } from "../../gen/ts/agentd/v1/agent_pb.js";
import { agentInputToWire, messageFromWire, sessionStateFromWire, snapshotFromWire } from "../../src/protocol/index.js";
import type { ToolResume } from "../../src/types/agent-io.js";
import type { Message } from "../../src/types/content.js";
import { chunksText, textInput, WireChat } from "../harness/wire-chat.js";
import { useAgentd } from "../harness/use-agentd.js";

const agentd = useAgentd({ args: ["test/fixtures/prompt-agents.ts"] });

const TRANSFER = 'call transfer {"amount":5,"to":"bob"}';

function resumeInput(resume: ToolResume) {
  return agentInputToWire({ resume });
}

function lastMessage(output: WireOutput): Message {
  return messageFromWire(output.message!);
}

/** Starts a server-managed bank conversation that ends interrupted; returns its output. */
async function interrupted(text = TRANSFER): Promise<WireOutput> {
  const { output } = await agentd.client.run({ init: { agent: "bank" }, input: textInput(text) });
  expect(output!.finishReason).toBe(FinishReason.INTERRUPTED);
  return output!;
}

async function latestMessages(sessionId: string): Promise<Message[]> {
  const { snapshot } = await agentd.client.getSnapshot({ agent: "bank", sessionId });
  return snapshotFromWire(snapshot!).state!.messages;
}

describe("interrupts", () => {
  it("an interrupting tool ends the turn INTERRUPTED with the pending request last, stored in the snapshot", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "bank" }, input: textInput(TRANSFER) });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.INTERRUPTED);
    expect(turn.turnEnd.snapshotId).not.toBe("");
    const { output } = await chat.finish();
    const part = lastMessage(output).content[0]!;
    expect(part.toolRequest).toMatchObject({ name: "transfer", input: { amount: 5, to: "bob" } });
    expect(part.metadata).toEqual({
      interrupt: { question: "Transfer 5 to bob?" },
      toolCall: expect.objectContaining({ tool: "transfer" }),
    });
    expect((await latestMessages(output.sessionId)).at(-1)).toEqual(lastMessage(output));
  });

  it("resume.respond in a new connection answers the request and the model continues", async () => {
    const first = await interrupted();
    const ref = lastMessage(first).content[0]!.toolRequest!.ref!;
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId: first.sessionId },
      input: resumeInput({
        respond: [{ toolResponse: { ref, name: "transfer", output: { status: "declined", amount: 0 } } }],
      }),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    expect(lastMessage(output!).content[0]?.text).toBe('tool results: transfer={"status":"declined","amount":0}');
    const messages = await latestMessages(first.sessionId);
    expect(messages.map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
    expect(messages[1]!.content[0]!.metadata).toEqual({
      resolvedInterrupt: { question: "Transfer 5 to bob?" },
      toolCall: expect.objectContaining({ tool: "transfer" }),
    });
  });

  it("resume.restart in the same connection re-runs the tool, which sees it was resumed", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "bank" }, input: textInput(TRANSFER) });
    await chat.nextTurn();
    chat.send({
      input: resumeInput({
        restart: [{ toolRequest: { name: "transfer" }, metadata: { resumed: { confirmed: true } } }],
      }),
    });
    const turn = await chat.nextTurn();
    expect(turn.turnEnd.finishReason).toBe(FinishReason.STOP);
    expect(chunksText(turn.chunks)).toBe('tool results: transfer={"status":"sent to bob","amount":5}');
    await chat.finish();
  });

  it("a restart may change the request's input", async () => {
    const first = await interrupted();
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId: first.sessionId },
      input: resumeInput({ restart: [{ toolRequest: { name: "transfer", input: { amount: 3, to: "ann" } } }] }),
    });
    expect(lastMessage(output!).content[0]?.text).toBe('tool results: transfer={"status":"sent to ann","amount":3}');
  });

  it("a restarted tool that interrupts again ends the turn INTERRUPTED with the new request, and a respond completes it", async () => {
    const first = await interrupted('call transfer {"amount":5000,"to":"bob"}');
    const resumeAt = { agent: "bank", sessionId: first.sessionId };
    const { output: again } = await agentd.client.run({
      init: resumeAt,
      input: resumeInput({ restart: [{ toolRequest: { name: "transfer" } }] }),
    });
    expect(again!.finishReason).toBe(FinishReason.INTERRUPTED);
    const pending = lastMessage(again!).content[0]!;
    expect(pending.toolRequest).toMatchObject({ name: "transfer", input: { amount: 5000, to: "bob" } });
    expect(pending.metadata).toEqual({
      interrupt: { question: "Large transfer: confirm 5000 to bob once more?" },
      toolCall: expect.objectContaining({ tool: "transfer" }),
    });
    expect((await latestMessages(first.sessionId)).at(-1)).toEqual(lastMessage(again!));
    const { output } = await agentd.client.run({
      init: resumeAt,
      input: resumeInput({
        respond: [
          {
            toolResponse: {
              ref: pending.toolRequest!.ref!,
              name: "transfer",
              output: { status: "held for review", amount: 5000 },
            },
          },
        ],
      }),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    expect(lastMessage(output!).content[0]?.text).toBe(
      'tool results: transfer={"status":"held for review","amount":5000}',
    );
    expect((await latestMessages(first.sessionId)).map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
  });

  it("a parallel sibling's output is kept with the interrupted message and answered in the model's order", async () => {
    const first = await interrupted(`call balance {}\n${TRANSFER}`);
    const pending = lastMessage(first).content;
    expect(pending.map((p) => p.metadata)).toEqual([
      { pendingOutput: { balance: 100 }, toolCall: expect.objectContaining({ tool: "balance", outcome: "ran" }) },
      { interrupt: { question: "Transfer 5 to bob?" }, toolCall: expect.objectContaining({ tool: "transfer" }) },
    ]);
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId: first.sessionId },
      input: resumeInput({ restart: [{ toolRequest: { name: "transfer", ref: pending[1]!.toolRequest!.ref! } }] }),
    });
    expect(lastMessage(output!).content[0]?.text).toBe(
      'tool results: balance={"balance":100}, transfer={"status":"sent to bob","amount":5}',
    );
  });

  it("client-managed: the state carries the interrupted message and a resume with that state completes", async () => {
    const { output: first } = await agentd.client.run({ init: { agent: "bank-client" }, input: textInput(TRANSFER) });
    expect(first!.finishReason).toBe(FinishReason.INTERRUPTED);
    expect(sessionStateFromWire(first!.state!).messages.at(-1)!.content[0]!.metadata).toEqual({
      interrupt: { question: "Transfer 5 to bob?" },
      toolCall: expect.objectContaining({ tool: "transfer" }),
    });
    const { output } = await agentd.client.run({
      init: { agent: "bank-client", state: first!.state },
      input: resumeInput({ respond: [{ toolResponse: { name: "transfer", output: { status: "held", amount: 5 } } }] }),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
    const state = sessionStateFromWire(output!.state!);
    expect(state.messages.map((m) => m.role)).toEqual(["user", "model", "tool", "model"]);
    expect(state.sessionId).toBe(first!.sessionId);
  });

  it("client-managed: restart in the same connection", async () => {
    const chat = new WireChat(agentd.client, { init: { agent: "bank-client" }, input: textInput(TRANSFER) });
    expect((await chat.nextTurn()).turnEnd.finishReason).toBe(FinishReason.INTERRUPTED);
    chat.send({ input: resumeInput({ restart: [{ toolRequest: { name: "transfer" } }] }) });
    expect(chunksText((await chat.nextTurn()).chunks)).toContain("sent to bob");
    const { output } = await chat.finish();
    expect(sessionStateFromWire(output.state!).messages).toHaveLength(4);
  });
});

describe("resume validation", () => {
  async function resumeFails(resume: ToolResume, text = TRANSFER): Promise<{ message: string; sessionId: string }> {
    const first = await interrupted(text);
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId: first.sessionId },
      input: resumeInput(resume),
    });
    expect(output!.finishReason).toBe(FinishReason.FAILED);
    expect(output!.error?.status).toBe("INVALID_ARGUMENT");
    return { message: output!.error!.message, sessionId: first.sessionId };
  }

  it("a response for an unknown ref is INVALID_ARGUMENT naming the pending requests", async () => {
    const { message } = await resumeFails({
      respond: [{ toolResponse: { ref: "nope", name: "transfer", output: {} } }],
    });
    expect(message).toContain('matches no pending tool request; pending: transfer (ref "call-1")');
  });

  it("a response for another tool's name is INVALID_ARGUMENT", async () => {
    const { message } = await resumeFails({ respond: [{ toolResponse: { name: "balance", output: {} } }] });
    expect(message).toContain("balance");
  });

  it("leaving an interrupted request unanswered is INVALID_ARGUMENT listing it", async () => {
    const { message } = await resumeFails(
      { restart: [{ toolRequest: { name: "transfer", ref: "call-1" } }] },
      'call transfer {"amount":1,"to":"a"}\ncall transfer {"amount":2,"to":"b"}',
    );
    expect(message).toContain('unanswered: transfer (ref "call-2")');
  });

  it("a response failing the tool's output schema is INVALID_ARGUMENT", async () => {
    const { message } = await resumeFails({ respond: [{ toolResponse: { name: "transfer", output: { status: 1 } } }] });
    expect(message).toContain("outputSchema");
  });

  it("a failed resume leaves the interrupted snapshot as the resume point", async () => {
    const { sessionId } = await resumeFails({
      respond: [{ toolResponse: { ref: "nope", name: "transfer", output: {} } }],
    });
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId },
      input: resumeInput({ restart: [{ toolRequest: { name: "transfer" } }] }),
    });
    expect(output!.finishReason).toBe(FinishReason.STOP);
  });

  it("resuming a conversation that is not interrupted is INVALID_ARGUMENT", async () => {
    const { output: done } = await agentd.client.run({ init: { agent: "bank" }, input: textInput("hi") });
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId: done!.sessionId },
      input: resumeInput({ respond: [{ toolResponse: { name: "transfer", output: {} } }] }),
    });
    expect(output!.error?.status).toBe("INVALID_ARGUMENT");
    expect(output!.error?.message).toContain("no interrupted turn");
  });

  it("a new message while a turn waits for a resume is INVALID_ARGUMENT", async () => {
    const first = await interrupted();
    const { output } = await agentd.client.run({
      init: { agent: "bank", sessionId: first.sessionId },
      input: textInput("never mind"),
    });
    expect(output!.error?.status).toBe("INVALID_ARGUMENT");
    expect(output!.error?.message).toContain("continue it with input.resume");
  });
});
