import { AgentError } from "../errors/agent-error.js";
import type { Model } from "../models/model.js";
import { PromptRegistry, type RenderedPromptTurn } from "./prompt-registry.js";
import { checkToolNames, maxIterations, type PromptBackedOptions } from "./inline-agent.js";
import type { Tool } from "../tools/define-tool.js";
import type { ToolResolver } from "../tools/tool-resolver.js";
import { runToolLoop } from "../tools/tool-loop.js";
import { Agent, type AgentDefinition } from "../runtime/agents/agent.js";
import { validateHistoryPolicy, type HistoryPolicy } from "../runtime/agents/history-policy.js";
import { agentFnFromTurns } from "../runtime/agents/custom-agent.js";

export type { InlineAgentDefinition, PromptBackedOptions } from "./inline-agent.js";
export { defineAgent } from "./inline-agent.js";

/** An agent backed by a `.prompt` file (dotprompt format). */
export interface PromptAgentDefinition<S> extends AgentDefinition<S>, PromptBackedOptions {
  /** The prompt's name in the registry; default the agent's name. */
  prompt?: string;
  /** Input rendered through the prompt every turn, over the front matter's defaults. */
  input?: Record<string, unknown>;
  /** Directory of `.prompt` files (loaded once per directory and shared); or pass `registry`. */
  promptDir?: string;
  registry?: PromptRegistry;
  /** Overrides the front matter's model. */
  model?: string | Model;
  /** Laid over the front matter's config. */
  config?: Record<string, unknown>;
  /**
   * Answers the front matter's tool references (names with a `/`, e.g. MCP
   * tools `weather/forecast`, `weather/*`), resolved at every turn.
   */
  toolResolver?: ToolResolver;
}

const directoryRegistries = new Map<string, PromptRegistry>();

/** The shared registry of a prompt directory (loaded on first use). */
export function promptRegistryFor(dir: string): PromptRegistry {
  const registry = directoryRegistries.get(dir) ?? PromptRegistry.fromDirectory(dir);
  directoryRegistries.set(dir, registry);
  return registry;
}

/**
 * Defines an agent backed by a prompt of a registry: by default the prompt
 * named like the agent with its front matter defaults, or `prompt` + `input`
 * so one prompt backs several agents. The prompt is looked up now (a missing
 * one throws AgentError NOT_FOUND naming the file) and rendered once as a
 * smoke check: {@link Agent.ready} rejects, naming the file, when the input
 * fails the prompt's input schema, the template does not render, no model is
 * set, or the front matter lists a tool the agent does not have. Each turn
 * renders the prompt (messages not stored) and runs like {@link defineAgent}.
 */
export function definePromptAgent<S = unknown>(definition: PromptAgentDefinition<S>): Agent<S> {
  const registry =
    definition.registry ?? (definition.promptDir !== undefined ? promptRegistryFor(definition.promptDir) : undefined);
  if (!registry)
    throw new AgentError("INVALID_ARGUMENT", `prompt agent "${definition.name}" needs promptDir or registry`);
  const promptName = definition.prompt ?? definition.name;
  const prompt = registry.get(promptName);
  const allTools = definition.tools ?? [];
  checkToolNames(allTools, definition.name);
  const max = maxIterations(definition.maxToolIterations, definition.name);
  const where = `prompt "${promptName}" (${prompt.origin})`;
  const resolver = definition.toolResolver;
  /** The model and history policy of a rendered turn; its tool names checked, references not yet resolved. */
  const settle = (
    rendered: RenderedPromptTurn,
  ): { model: string | Model; history: HistoryPolicy | undefined; local: Tool[]; refs: string[] } => {
    const model = definition.model ?? rendered.model;
    if (!model)
      throw new AgentError(
        "INVALID_ARGUMENT",
        `${where} sets no model: add "model:" to its front matter or pass model`,
      );
    const policy = definition.history ?? rendered.history;
    const history = policy !== undefined ? validateHistoryPolicy(policy, where) : undefined;
    if (!rendered.tools) return { model, history, local: allTools, refs: [] };
    const local: Tool[] = [];
    const refs: string[] = [];
    for (const name of rendered.tools) {
      const tool = allTools.find((t) => t.name === name);
      if (tool) local.push(tool);
      else if (resolver?.handles(name)) {
        resolver.check(name, where);
        refs.push(name);
      } else
        throw new AgentError(
          "INVALID_ARGUMENT",
          `${where} uses tool "${name}", which agent "${definition.name}" does not define${name.includes("/") ? " (MCP tool references need --mcp-config)" : ""}`,
        );
    }
    return { model, history, local, refs };
  };
  const render = () => registry.render(promptName, definition.input);
  const ready = render().then((rendered) => void settle(rendered));
  ready.catch(() => {});
  return new Agent(
    { ...definition, description: definition.description ?? prompt.parsed.description },
    agentFnFromTurns<S>(async (input, ctx) => {
      const rendered = await render();
      const { model, history, local, refs } = settle(rendered);
      const tools = refs.length > 0 ? [...local, ...(await resolver!.resolve(refs, where))] : local;
      const config = { ...rendered.config, ...definition.config };
      return runToolLoop(input, ctx, {
        model: ctx.model(model),
        prelude: rendered.messages,
        tools,
        ...(Object.keys(config).length > 0 ? { config } : {}),
        maxToolIterations: max,
        ...(history ? { history } : {}),
      });
    }, ready),
    { ready },
  );
}

/**
 * One server-managed agent per prompt of `dir`, named after its file, on the
 * server's default store (what `agentd serve --prompts <dir>` serves); tool
 * references in their front matter (`<server>/<tool>`) go to `toolResolver`.
 */
export function promptAgentsFromDirectory(dir: string, toolResolver?: ToolResolver): Agent<unknown>[] {
  const registry = PromptRegistry.fromDirectory(dir);
  return registry
    .names()
    .map((name) => definePromptAgent({ name, registry, store: "default", ...(toolResolver ? { toolResolver } : {}) }));
}
