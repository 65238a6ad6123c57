import { AgentError } from "../errors/agent-error.js";
import { toolRequestsOf, type Model } from "../models/model.js";
import type { TurnFnContext } from "../runtime/agents/agent-function.js";
import { hasResume, type AgentInput, type TurnResult } from "../types/agent-io.js";
import { budgetedHistory, type HistoryPolicy } from "../runtime/agents/history-policy.js";
import { summarizedHistory, withSummary, type SummarizedHistory } from "../runtime/agents/history-summary.js";
import { messageText, type Message, type Part, type ToolRequest } from "../types/content.js";
import { describeZodError } from "../errors/zod-error.js";
import type { Tool, ToolContext } from "./define-tool.js";
import { toolSpan } from "./tool-span.js";
import {
  countToolCall,
  ToolCallJournal,
  withoutJournaledOutput,
  type CallPlan,
  type JournalCall,
} from "./tool-call-journal.js";
import {
  INTERRUPT_KEY,
  PENDING_OUTPUT_KEY,
  pendingRequests,
  planResume,
  RESOLVED_INTERRUPT_KEY,
  ToolInterrupt,
  unresolvedInterruptError,
} from "./interrupts.js";

/** Default bound of tool rounds per turn. */
export const DEFAULT_MAX_TOOL_ITERATIONS = 10;

/** What the summary model of a `summarize` history policy is told. */
const SUMMARY_INSTRUCTION =
  "Summarise the conversation you are given in a few sentences: the facts, decisions and open questions a reader needs to continue it.";

/** What one turn of a prompt-backed agent runs with. */
export interface ToolLoopSettings {
  model: Model;
  /** Prompt-rendered messages, sent before the history and never stored. */
  prelude: Message[];
  tools: Tool[];
  config?: Record<string, unknown>;
  /** Tool rounds allowed per turn; one more tool request fails the turn. */
  maxToolIterations: number;
  /** Bounds the history each model call is sent (the session keeps all of it); unset: the whole history. */
  history?: HistoryPolicy;
}

/** How each request of a model message is answered: a known output, or by running the tool. */
type Answer = { kind: "known"; output: unknown } | { kind: "run"; request: ToolRequest; resumed?: unknown };
type ToolOutcome = { output: unknown } | { interrupt: Record<string, unknown> | true };

/**
 * One turn of a prompt-backed agent: calls the model over prelude + history,
 * streams its chunks, appends its message, runs the tools it requests (in
 * parallel; responses keep the model's order in one `tool` message) and
 * loops until the model answers without tool requests, at most
 * `maxToolIterations` tool rounds (then AgentError RESOURCE_EXHAUSTED naming
 * the limit). A tool that interrupts ends the turn `interrupted` with the
 * model message (its requests marked) last in the history; `input.resume`
 * continues it after {@link planResume} validated it. A model request for an
 * unknown tool or with input failing the tool's schema is answered with
 * `{ error }` so the model can correct itself; a tool that throws fails the turn.
 * Before each model call it takes the turn's steer inputs (`turn.takeSteering()`):
 * a steer sent during a tool round is in the history the next call sees.
 * Every call gets an idempotency key and is journaled on its request part
 * ({@link ToolCallJournal}); a continued turn (takeover) answers a round it
 * was cut in from the journal: journaled results are replayed, the rest run
 * again with the same key, except `never-repeat` tools, which interrupt.
 */
export async function runToolLoop<S>(
  input: AgentInput,
  ctx: TurnFnContext<S>,
  settings: ToolLoopSettings,
): Promise<TurnResult> {
  return new ToolLoop(ctx, settings).run(input);
}

class ToolLoop<S> {
  private readonly tools: Map<string, Tool>;
  private streamIndex = 0;
  private journal!: ToolCallJournal;

  constructor(
    private readonly ctx: TurnFnContext<S>,
    private readonly settings: ToolLoopSettings,
  ) {
    this.tools = new Map(settings.tools.map((t) => [t.name, t]));
    for (const t of settings.tools) if (t.ref !== undefined && !this.tools.has(t.ref)) this.tools.set(t.ref, t);
  }

  async run(input: AgentInput): Promise<TurnResult> {
    // The history is read message by message: a turn never copies it before the model call.
    const session = this.ctx.session;
    const turn = this.ctx.turn;
    this.journal = new ToolCallJournal(
      this.ctx.session,
      this.ctx.session.sessionId,
      input.requestId,
      turn.checkpoint ? () => turn.checkpoint!() : undefined,
      turn.toolJournal,
    );
    let rounds = 0;
    if (hasResume(input)) {
      if (input.message)
        throw new AgentError(
          "INVALID_ARGUMENT",
          "send input.resume without input.message: a resume continues the interrupted turn",
        );
      const pending = pendingRequests(session.messageAt(-1));
      if (!pending)
        throw new AgentError(
          "INVALID_ARGUMENT",
          "input.resume: the conversation has no interrupted turn to resume (its last message holds no pending tool requests)",
        );
      const actions = planResume(pending, input.resume!);
      const answers = new Map<number, Answer>();
      for (const p of pending) {
        const action = actions.get(p.partIndex);
        if (!action) answers.set(p.partIndex, { kind: "known", output: p.output ?? null });
        else if (action.kind === "respond")
          answers.set(p.partIndex, { kind: "known", output: this.checkClientOutput(p.request, action.output) });
        else answers.set(p.partIndex, { kind: "run", request: action.request, resumed: action.resumed });
      }
      if (await this.answer(answers, Math.max(0, this.journal.nextRound - 1))) return { finishReason: "interrupted" };
      rounds = 1;
    } else {
      const pending = pendingRequests(session.messageAt(input.message ? -2 : -1));
      if (pending) throw unresolvedInterruptError(pending);
      // A turn continued after a takeover: the tool rounds it already did count toward the limit.
      if (this.ctx.turn.continued) rounds = toolRoundsSinceLastUserMessage(session.messages());
      // Cut inside a tool round (checkpointed before or during it): answer that round first, from the journal.
      const open = this.ctx.turn.continued ? session.messageAt(-1) : undefined;
      if (open?.role === "model" && toolRequestsOf(open).length > 0) {
        rounds++;
        if (await this.answer(runAnswers(open), this.journal.roundOf(open))) return { finishReason: "interrupted" };
      }
    }
    for (;;) {
      // Steer inputs sent while the turn runs join the history before the model is called.
      this.ctx.turn.takeSteering?.();
      const index = this.streamIndex++;
      const sent = await this.modelHistory();
      const response = await this.settings.model.generate(
        {
          messages: sent.withPrelude ? sent.messages : [...this.settings.prelude, ...sent.messages],
          ...(this.settings.tools.length > 0 ? { tools: this.settings.tools.map((t) => t.modelDefinition) } : {}),
          ...(this.settings.config ? { config: this.settings.config } : {}),
        },
        { signal: this.ctx.turn.signal, onChunk: (chunk) => this.ctx.responder.sendModelChunk({ ...chunk, index }) },
      );
      this.ctx.session.addMessages(sent.fresh ? withSummary(response.message, sent.fresh) : response.message);
      if (toolRequestsOf(response.message).length === 0) return { finishReason: response.finishReason };
      const max = this.settings.maxToolIterations;
      if (rounds >= max) {
        throw new AgentError(
          "RESOURCE_EXHAUSTED",
          `tool loop limit reached: the model requested tools again after ${max} tool round(s) in this turn (maxToolIterations = ${max}); raise maxToolIterations or change the prompt`,
          { details: { maxToolIterations: max } },
        );
      }
      rounds++;
      const round = this.journal.nextRound++;
      if (await this.answer(runAnswers(response.message), round)) return { finishReason: "interrupted" };
    }
  }

  /**
   * The history the next model call is sent: all of it, or what the agent's
   * history policy keeps (with a fresh summary to cache, mode `summarize`).
   */
  private async modelHistory(): Promise<SummarizedHistory & { withPrelude?: true }> {
    const policy = this.settings.history;
    // The whole history: prelude and history in one block copy from the session's own array.
    if (!policy) return { messages: this.ctx.session.messagesAfter(this.settings.prelude), withPrelude: true };
    const history = this.ctx.session.messages();
    if (policy.mode !== "summarize") return { messages: budgetedHistory(history, policy) };
    return summarizedHistory(history, policy, (messages, previous) => this.summarize(messages, previous));
  }

  /** Asks the policy's summary model for a summary of `messages` (after `previous`). */
  private async summarize(messages: readonly Message[], previous: string | undefined): Promise<string> {
    const model = this.ctx.model(this.settings.history!.summaryModel!);
    const response = await model.generate(
      {
        messages: [
          { role: "system", content: [{ text: SUMMARY_INSTRUCTION }] },
          ...(previous ? [{ role: "user" as const, content: [{ text: `Summary so far: ${previous}` }] }] : []),
          ...messages,
          { role: "user", content: [{ text: "Summarise the conversation above." }] },
        ],
      },
      { signal: this.ctx.turn.signal },
    );
    return messageText(response.message);
  }

  /**
   * Answers the requests of the last message (a model message): runs the
   * tools, then either marks the message interrupted (returns true) or
   * appends the `tool` message with every response in the model's order.
   */
  private async answer(answers: Map<number, Answer>, round: number): Promise<boolean> {
    const entries = [...answers.entries()];
    const calls = new Map<number, JournalCall>();
    for (const [partIndex, a] of entries)
      if (a.kind === "run")
        calls.set(partIndex, {
          partIndex,
          round,
          request: a.request,
          ...(a.resumed !== undefined ? { resumed: a.resumed } : {}),
        });
    const plan = await this.journal.open([...calls.values()], (name) => this.tools.get(name)?.semantics ?? "effect");
    const settled = await Promise.allSettled(
      entries.map(([i, a]): Promise<ToolOutcome> =>
        a.kind === "known" ? Promise.resolve({ output: a.output }) : this.call(calls.get(i)!, plan.get(i)!),
      ),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed) throw failed.reason;
    const outcomes = new Map(entries.map(([i], k) => [i, (settled[k] as PromiseFulfilledResult<ToolOutcome>).value]));
    const messages = this.ctx.session.messages();
    const answered = messages.at(-1)!;
    const interrupted = [...outcomes.values()].some((o) => "interrupt" in o);
    const last: Message = {
      ...answered,
      content: answered.content
        .map((part, i) => {
          const outcome = outcomes.get(i);
          if (!part.toolRequest || !outcome) return part;
          const { [INTERRUPT_KEY]: wasInterrupted, [PENDING_OUTPUT_KEY]: _known, ...rest } = part.metadata ?? {};
          const request =
            answers.get(i)?.kind === "run" ? (answers.get(i) as { request: ToolRequest }).request : part.toolRequest;
          let metadata: Record<string, unknown> = rest;
          if (interrupted)
            metadata =
              "interrupt" in outcome
                ? { ...rest, [INTERRUPT_KEY]: outcome.interrupt }
                : { ...rest, [PENDING_OUTPUT_KEY]: outcome.output };
          else if (wasInterrupted !== undefined) metadata = { ...rest, [RESOLVED_INTERRUPT_KEY]: wasInterrupted };
          return {
            ...part,
            toolRequest: { ...part.toolRequest, input: request.input },
            ...(Object.keys(metadata).length > 0 ? { metadata } : { metadata: undefined }),
          };
        })
        .map((part) => dropUndefinedMetadata(withoutJournaledOutput(part))),
    };
    this.ctx.session.setMessages([...messages.slice(0, -1), last]);
    if (interrupted) return true;
    const responses: Part[] = entries.map(([i]) => {
      const request = last.content[i]!.toolRequest!;
      return {
        toolResponse: {
          ...(request.ref ? { ref: request.ref } : {}),
          name: request.name,
          output: (outcomes.get(i) as { output: unknown }).output,
        },
      };
    });
    this.ctx.session.addMessages({ role: "tool", content: responses });
    await this.ctx.responder.sendModelChunk({
      role: "tool",
      content: structuredClone(responses),
      index: this.streamIndex++,
    });
    // A tool round must not run twice: a takeover of detached work continues after it.
    await this.journal.checkpoint();
    return false;
  }

  /** Answers one call as planned: replays its journaled result, refuses it (never-repeat) or runs it and journals the result. */
  private async call(c: JournalCall, plan: CallPlan): Promise<ToolOutcome> {
    const tool = c.request.name;
    if (plan.kind === "replay") {
      countToolCall(tool, "replayed");
      this.journal.set(c.partIndex, { outcome: "replayed" });
      return { output: plan.output };
    }
    if (plan.kind === "refuse") {
      countToolCall(tool, "refused");
      return { interrupt: { neverRepeat: { key: plan.key, tool, startedAt: plan.startedAt } } };
    }
    const outcome = await this.runTool(c.request, c.resumed, plan.key);
    if ("output" in outcome) {
      countToolCall(tool, "ran");
      // Durable before the next model call: a re-execution replays it instead of running the tool again.
      // A tool the agent does not define had no effect to guard, and its name is the model's, which a
      // store may not be able to keep (PostgreSQL text holds no NUL): its error answer stays in the turn only.
      await this.journal.completed(c.partIndex, outcome.output, this.tools.has(tool));
    }
    return outcome;
  }

  private async runTool(request: ToolRequest, resumed: unknown, idempotencyKey: string): Promise<ToolOutcome> {
    const tool = this.tools.get(request.name);
    if (!tool)
      return {
        output: {
          error: `unknown tool "${request.name}"; available tools: ${[...this.tools.keys()].join(", ") || "(none)"}`,
        },
      };
    const parsed = tool.inputSchema.safeParse(request.input ?? {});
    if (!parsed.success)
      return { output: { error: `invalid input for tool "${request.name}": ${describeZodError(parsed.error)}` } };
    const toolCtx: ToolContext<S> = {
      session: this.ctx.session,
      responder: this.ctx.responder,
      signal: this.ctx.turn.signal,
      turn: this.ctx.turn,
      request: structuredClone(request),
      principal: this.ctx.principal,
      idempotencyKey,
      ...(resumed !== undefined ? { resumed } : {}),
      interrupt: (metadata) => {
        throw new ToolInterrupt(metadata);
      },
    };
    try {
      const output = await toolSpan(request, () => tool.run(parsed.data, toolCtx));
      if (!tool.outputSchema) return { output: output === undefined ? null : output };
      const checked = tool.outputSchema.safeParse(output);
      if (!checked.success)
        throw new AgentError(
          "INTERNAL",
          `returned output that fails its outputSchema: ${describeZodError(checked.error)}`,
        );
      return { output: checked.data === undefined ? null : checked.data };
    } catch (err) {
      if (err instanceof ToolInterrupt) return { interrupt: err.metadata ?? true };
      const e = AgentError.from(err);
      throw new AgentError(e.status, `tool "${request.name}" failed: ${e.message}`, {
        cause: err,
        ...(e.details ? { details: e.details } : {}),
      });
    }
  }

  /** A client's respond output, checked against the tool's output schema when it has one. */
  private checkClientOutput(request: ToolRequest, output: unknown): unknown {
    const schema = this.tools.get(request.name)?.outputSchema;
    if (!schema) return output ?? null;
    const checked = schema.safeParse(output);
    if (!checked.success) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `resume response for tool "${request.name}" fails its outputSchema: ${describeZodError(checked.error)}`,
      );
    }
    return checked.data ?? null;
  }
}

/** Every tool request of `message`, to be run. */
function runAnswers(message: Message): Map<number, Answer> {
  const answers = new Map<number, Answer>();
  message.content.forEach((part, i) => {
    if (part.toolRequest) answers.set(i, { kind: "run", request: part.toolRequest });
  });
  return answers;
}

/** How many `tool` messages follow the last user message (the tool rounds of the turn so far). */
function toolRoundsSinceLastUserMessage(history: readonly Message[]): number {
  let rounds = 0;
  for (let i = history.length - 1; i >= 0 && history[i]!.role !== "user"; i--) {
    if (history[i]!.role === "tool") rounds++;
  }
  return rounds;
}

function dropUndefinedMetadata(part: Part): Part {
  if (part.metadata !== undefined) return part;
  const { metadata: _m, ...rest } = part;
  return rest;
}
