import { z, type ZodType } from "zod";
import { AgentError } from "../errors/agent-error.js";
import type { ModelToolDefinition } from "../models/model.js";
import type { Responder, TurnContext } from "../runtime/agents/agent-function.js";
import type { Session } from "../runtime/sessions/session.js";
import type { ToolRequest } from "../types/content.js";
import type { Principal } from "../types/principal.js";
import type { ToolSemantics } from "./tool-call-journal.js";

/** What a tool's `run` can use besides its input. */
export interface ToolContext<S = unknown> {
  /** The current session: `updateCustom` streams patches, `addArtifacts`/`responder.sendArtifact` record artifacts. */
  session: Session<S>;
  /** The agent's output channel (artifacts, extra model chunks). */
  responder: Responder;
  /** Aborts when the invocation is cancelled. */
  signal: AbortSignal;
  /** The running turn. */
  turn: TurnContext;
  /** The model's request being answered (ref, name and raw input). */
  request: ToolRequest;
  /** Who the invocation acts for (its tenant and subject). */
  principal?: Principal;
  /**
   * The call's idempotency key (a UUID): the same on every re-execution of
   * this call (a takeover of detached work, a re-run of its turn), another
   * for any other call. Pass it to the API the tool calls (Stripe's
   * `Idempotency-Key` header, an AIP-155 `request_id`) so a repeated call has
   * its effect once. See "Tools with side effects" in docs/prompt-agents.md.
   */
  idempotencyKey: string;
  /**
   * Set when the tool runs again because a client restarted an interrupted
   * request: the restart part's `metadata.resumed`, or `true`.
   */
  resumed?: unknown;
  /**
   * Stops the tool without an answer: the turn ends `interrupted` with this
   * request pending; `metadata` is stored on the request for the client.
   */
  interrupt(metadata?: Record<string, unknown>): never;
}

/** A tool as declared with {@link defineTool}. */
export interface ToolDefinition<I, O, S = unknown> {
  /** Letters, digits, "_" or "-", at most 64 characters (what every provider accepts). */
  name: string;
  /** Tells the model when and how to use the tool. */
  description: string;
  /** Validates the model's input; its JSON Schema is what the model sees. */
  inputSchema: ZodType<I>;
  /** Validates what `run` returns (and what clients send back when resuming). */
  outputSchema?: ZodType<O>;
  /**
   * What repeating a call does (default `effect`): `idempotent` runs again
   * when it has no journaled result, `effect` replays a journaled result and
   * is re-invoked with the same `ctx.idempotencyKey` otherwise, `never-repeat`
   * is never re-invoked after it may have started without a journaled result
   * (the turn is interrupted with `interrupt.neverRepeat` instead).
   */
  semantics?: ToolSemantics;
  run(input: I, ctx: ToolContext<S>): O | Promise<O>;
}

/**
 * A defined tool: its definition plus the JSON Schema description sent to
 * models. The defaults let one list hold tools of different input, output and
 * state types (the tool loop validates values against the tool's own schemas).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous tool lists, checked by schema at run time
export interface Tool<I = any, O = any, S = any> extends ToolDefinition<I, O, S> {
  /** Brand used to recognise tools. */
  readonly __agentdTool: true;
  /** Another name a model may request the tool by (an MCP tool's reference `<server>/<tool>`). */
  readonly ref?: string;
  /** The tool as described to a model (input as JSON Schema). */
  readonly modelDefinition: ModelToolDefinition;
}

/**
 * Defines a tool for prompt-backed agents. The input schema is converted once
 * (zod 4 `z.toJSONSchema`) and sent to the model; the tool loop validates the
 * model's input before `run` and the output after it. Throws AgentError
 * INVALID_ARGUMENT for a bad name or a schema that has no JSON Schema form.
 */
export function defineTool<I, O, S = unknown>(definition: ToolDefinition<I, O, S>): Tool<I, O, S> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(definition.name)) {
    throw new AgentError("INVALID_ARGUMENT", `tool name "${definition.name}" must be 1-64 letters, digits, "_" or "-"`);
  }
  let inputSchema: Record<string, unknown>;
  try {
    inputSchema = z.toJSONSchema(definition.inputSchema, { io: "input" }) as Record<string, unknown>;
  } catch (err) {
    throw new AgentError(
      "INVALID_ARGUMENT",
      `tool "${definition.name}": its inputSchema has no JSON Schema form: ${(err as Error).message}`,
    );
  }
  delete inputSchema.$schema;
  return {
    ...definition,
    __agentdTool: true,
    modelDefinition: { name: definition.name, description: definition.description, inputSchema },
  };
}
