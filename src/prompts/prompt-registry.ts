import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { Dotprompt, type ParsedPrompt, type PromptMetadata, type Message as DotpromptMessage } from "dotprompt";
import { z } from "zod";
import { AgentError } from "../errors/agent-error.js";
import type { Message, Part } from "../types/content.js";
import { describeZodError } from "../errors/zod-error.js";

/** One prompt known to a registry. */
export interface LoadedPrompt {
  name: string;
  /** Where it came from: the file path, or `inline:<name>` for prompts defined in code. */
  origin: string;
  source: string;
  parsed: ParsedPrompt;
}

/** A prompt rendered for one turn. */
export interface RenderedPromptTurn {
  /** The rendered messages (sent before the history, never stored). */
  messages: Message[];
  /** The front matter's model, if any. */
  model?: string;
  /** The front matter's generation config. */
  config: Record<string, unknown>;
  /** The front matter's tool names, if it lists any. */
  tools?: string[];
  description?: string;
  /** The front matter's `history:` (a history policy, checked by the agent), if set. */
  history?: unknown;
}

/**
 * `.prompt` files (the dotprompt format: YAML front matter with model,
 * config, input schema and defaults; a Handlebars template with `{{role}}`
 * markers) by name. Loading is synchronous, so a missing prompt is reported
 * where the agent is defined; rendering applies the front matter's
 * `input.default` under the given input and validates the result against
 * the input schema before rendering the template.
 */
export class PromptRegistry {
  private readonly prompts = new Map<string, LoadedPrompt>();
  private readonly dotprompt: Dotprompt;
  private readonly metadata = new Map<string, Promise<PromptMetadata>>();
  /** Each prompt's input schema as zod, converted from the front matter's JSON schema on first render. */
  private readonly inputSchemas = new Map<string, z.ZodType>();
  private readonly partials: Record<string, string> = {};
  /** The directory it was loaded from, if any. */
  readonly dir: string | undefined;

  constructor(dir?: string) {
    this.dir = dir;
    if (dir !== undefined) this.loadDirectory(dir);
    this.dotprompt = new Dotprompt({ partials: this.partials });
  }

  /**
   * Every `*.prompt` file of `dir` (not recursive), named after the file
   * (`chat.prompt` → `chat`); files starting with `_` are partials. Throws
   * AgentError NOT_FOUND when the directory does not exist, INVALID_ARGUMENT
   * naming the file when a front matter is not valid YAML.
   */
  static fromDirectory(dir: string): PromptRegistry {
    return new PromptRegistry(resolve(dir));
  }

  private loadDirectory(dir: string): void {
    const info = statSync(dir, { throwIfNoEntry: false });
    if (!info?.isDirectory()) throw new AgentError("NOT_FOUND", `prompt directory "${dir}" does not exist`);
    for (const file of readdirSync(dir).sort()) {
      if (!file.endsWith(".prompt")) continue;
      const path = join(dir, file);
      const source = readFileSync(path, "utf8");
      const name = basename(file, ".prompt");
      if (name.startsWith("_")) this.partials[name.slice(1)] = source;
      else this.add(name, source, path);
    }
  }

  /** Adds (or replaces) a prompt from source text, e.g. a prompt defined in code. */
  define(name: string, source: string): this {
    this.add(name, source, `inline:${name}`);
    return this;
  }

  private add(name: string, source: string, origin: string): void {
    const parsed = new Dotprompt().parse(source);
    if (source.trimStart().startsWith("---") && parsed.template.trimStart().startsWith("---")) {
      throw new AgentError("INVALID_ARGUMENT", `prompt "${name}" (${origin}): the front matter is not valid YAML`);
    }
    this.prompts.set(name, { name, origin, source, parsed });
    this.metadata.delete(name);
    this.inputSchemas.delete(name);
  }

  /** Names of the prompts (partials excluded), sorted. */
  names(): string[] {
    return [...this.prompts.keys()].sort();
  }

  /** The prompt named `name`; throws AgentError NOT_FOUND naming the file it looked for. */
  get(name: string): LoadedPrompt {
    const prompt = this.prompts.get(name);
    if (prompt) return prompt;
    const where = this.dir ? `no file ${join(this.dir, `${name}.prompt`)}` : "no such prompt was defined";
    throw new AgentError(
      "NOT_FOUND",
      `prompt "${name}" not found: ${where}; available: ${this.names().join(", ") || "(none)"}`,
    );
  }

  private promptMetadata(prompt: LoadedPrompt): Promise<PromptMetadata> {
    let meta = this.metadata.get(prompt.name);
    if (!meta) {
      meta = this.dotprompt.renderMetadata(prompt.parsed);
      this.metadata.set(prompt.name, meta);
    }
    return meta;
  }

  /**
   * Renders `name` with `input` laid over the front matter's defaults. Rejects
   * with AgentError INVALID_ARGUMENT naming the prompt's file when the input
   * fails the input schema or the template fails to render.
   */
  async render(
    name: string,
    input: Record<string, unknown> | undefined,
    context?: Record<string, unknown>,
  ): Promise<RenderedPromptTurn> {
    const prompt = this.get(name);
    const fail = (what: string): AgentError =>
      new AgentError("INVALID_ARGUMENT", `prompt "${name}" (${prompt.origin}): ${what}`);
    let meta: PromptMetadata;
    try {
      meta = await this.promptMetadata(prompt);
    } catch (err) {
      throw fail(`invalid front matter: ${(err as Error).message}`);
    }
    const merged = { ...(meta.input?.default ?? {}), ...(input ?? {}) };
    if (meta.input?.schema) {
      let schema = this.inputSchemas.get(name);
      if (!schema) this.inputSchemas.set(name, (schema = z.fromJSONSchema(meta.input.schema)));
      const checked = schema.safeParse(merged);
      if (!checked.success) throw fail(`input fails the prompt's input schema: ${describeZodError(checked.error)}`);
    }
    let rendered;
    try {
      rendered = await this.dotprompt.render(prompt.source, { input: merged, ...(context ? { context } : {}) });
    } catch (err) {
      throw fail(`template failed to render: ${(err as Error).message.split("\n")[0]}`);
    }
    return {
      messages: rendered.messages.map(toMessage).filter((m) => m.content.length > 0),
      ...(meta.model ? { model: meta.model } : {}),
      config: { ...(meta.config ?? {}) },
      ...(meta.tools?.length ? { tools: [...meta.tools] } : {}),
      ...(meta.description ? { description: meta.description } : {}),
      ...(meta.raw?.["history"] !== undefined ? { history: structuredClone(meta.raw["history"]) } : {}),
    };
  }
}

/** A dotprompt message as ours; the template's surrounding whitespace is trimmed from text parts. */
function toMessage(message: DotpromptMessage): Message {
  const content: Part[] = [];
  for (const part of message.content) {
    const p = part as Part;
    if (p.text !== undefined) {
      const text = p.text.trim();
      if (text) content.push({ text, ...(p.metadata ? { metadata: p.metadata } : {}) });
    } else if (p.media || p.data !== undefined || p.toolRequest || p.toolResponse) {
      content.push(structuredClone(p));
    }
  }
  return {
    role: message.role as Message["role"],
    content,
    ...(message.metadata ? { metadata: message.metadata } : {}),
  };
}
