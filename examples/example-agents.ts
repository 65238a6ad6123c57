import { z } from "zod";
// Each from its own module rather than the package root, so serving the examples loads neither the
// .prompt toolchain nor the MCP SDK (an agents module outside this repository imports the same
// names from "@agentd-dev/agentd").
import { defineAgent } from "../src/prompts/inline-agent.js";
import type { Agent, AnyAgent } from "../src/runtime/agents/agent.js";
import { defineCustomAgent } from "../src/runtime/agents/custom-agent.js";
import { generateModelTurn } from "../src/runtime/agents/model-turn.js";
import { splitIntoChunks } from "../src/models/echo-model.js";
import { messageText } from "../src/types/content.js";

/** Custom state of the `tasks` example agent. */
export const TaskListSchema = z.object({
  tasks: z.array(z.object({ id: z.number().int(), title: z.string(), done: z.boolean() })),
  nextId: z.number().int(),
});

/** The `tasks` agent's custom state. */
export type TaskList = z.infer<typeof TaskListSchema>;

/**
 * `assistant`: keeps the conversation on the server and answers with the
 * offline echo model, or with the model named by `AGENTD_ASSISTANT_MODEL`
 * (e.g. `openai/gpt-4o-mini`; the key is checked on the first turn).
 */
export function assistantAgent(env: NodeJS.ProcessEnv = process.env): Agent<unknown> {
  const model = env.AGENTD_ASSISTANT_MODEL?.trim() || "echo";
  if (model === "echo") {
    return defineCustomAgent({
      name: "assistant",
      description: "A conversational assistant on the offline echo model; keeps the conversation on the server.",
      store: "default",
      turn: (_input, ctx) => generateModelTurn(ctx, "echo"),
    });
  }
  return defineAgent({
    name: "assistant",
    description: `A conversational assistant on ${model}; keeps the conversation on the server.`,
    store: "default",
    model,
    system: "You are a helpful, concise assistant.",
  });
}

/**
 * `tasks`: keeps a task list in custom state. Each turn adds the user's text as
 * a task, or with `done <id>` marks one done; it streams the list as live
 * custom-state patches and records it as the artifact `tasks.md`.
 */
export function tasksAgent(): Agent<TaskList> {
  return defineCustomAgent<TaskList>({
    name: "tasks",
    description: "Keeps a task list: send a task title to add it, or 'done <id>' to complete one.",
    store: "default",
    stateSchema: TaskListSchema,
    turn: async (input, ctx) => {
      const text = messageText(input.message).trim();
      const done = /^done\s+(\d+)$/i.exec(text);
      let reply: string;
      if (done) {
        const id = Number(done[1]);
        ctx.session.updateCustom((s) => ({
          ...list(s),
          tasks: list(s).tasks.map((t) => (t.id === id ? { ...t, done: true } : t)),
        }));
        reply = `Completed task #${id}.`;
      } else {
        const id = list(ctx.session.custom()).nextId;
        ctx.session.updateCustom((s) => ({
          tasks: [...list(s).tasks, { id, title: text, done: false }],
          nextId: id + 1,
        }));
        reply = `Added task #${id}: ${text}`;
      }
      for (const piece of splitIntoChunks(reply))
        await ctx.responder.sendModelChunk({ role: "model", content: [{ text: piece }], index: 0 });
      ctx.session.addMessages({ role: "model", content: [{ text: reply }] });
      await ctx.responder.sendArtifact({
        name: "tasks.md",
        parts: [{ text: renderTasks(list(ctx.session.custom())) }],
        metadata: { contentType: "text/markdown" },
      });
      return { finishReason: "stop" };
    },
  });
}

function list(state: TaskList | undefined): TaskList {
  return state ?? { tasks: [], nextId: 1 };
}

function renderTasks(state: TaskList): string {
  return state.tasks.map((t) => `- [${t.done ? "x" : " "}] #${t.id} ${t.title}`).join("\n") + "\n";
}

/** The agents `agentd serve` always serves: `assistant` and `tasks`. */
export function exampleAgents(): AnyAgent[] {
  return [assistantAgent(), tasksAgent()];
}
