import { context, trace, type Context, type Span } from "@opentelemetry/api";
import type { Model } from "../../models/model.js";
import type { FinishReason } from "../../types/snapshot.js";
import { addUsage, type Usage } from "../../types/usage.js";
import {
  agentdInstruments,
  agentdTracer,
  definedAttributes,
  recordFailure,
  type AgentdInstruments,
} from "../telemetry/telemetry.js";
import * as names from "../telemetry/telemetry-names.js";
import { countUsage, traceModel } from "../telemetry/traced-model.js";

/** The identity of a turn, as its span records it. */
export interface TurnIdentity {
  turnIndex: number;
  snapshotId?: string;
  parentId?: string;
}

interface RunningTurn {
  span: Span;
  context: Context;
  startedAt: number;
}

/**
 * The telemetry and token usage of one invocation. Usage is always counted
 * (it goes on the wire): each model call's tokens add up per turn and per
 * invocation. With telemetry on (`enabled`) it also makes a span
 * `agentd.turn` per turn (a child of the span active when the invocation
 * started, normally the RPC's server span; the turn's model, tool and store
 * spans are its children), records `agentd.turns`, `agentd.turn.duration` and
 * `agentd.invocations.active`, and traces model calls. After detach, turns
 * run under an `agentd.detached` span in the same trace, linked to the span
 * that detached them, and counted in `agentd.detached.pending` until the
 * background work ends. With telemetry off nothing but the usage arithmetic
 * runs. Turns run one at a time, so one turn is tracked.
 */
export class InvocationTelemetry {
  private parent: Context;
  private turn: RunningTurn | undefined;
  private turnTokens: Usage | undefined;
  private detachedSpan: Span | undefined;
  private total: Usage | undefined;
  private finished = false;
  private readonly models = new Map<string | Model, Model>();
  private readonly instruments: AgentdInstruments | undefined;
  private readonly agentAttributes;

  constructor(
    private readonly agent: string,
    private readonly sessionId: string,
    enabled: boolean,
  ) {
    this.parent = context.active();
    this.agentAttributes = { [names.ATTR_AGENT]: agent };
    this.instruments = enabled ? agentdInstruments() : undefined;
    this.instruments?.invocationsActive.add(1, this.agentAttributes);
  }

  /** The tokens of every turn so far (undefined while none reported usage). */
  get usage(): Usage | undefined {
    return this.total;
  }

  /** The tokens of the running turn so far (undefined while none reported usage). */
  get turnUsage(): Usage | undefined {
    return this.turnTokens;
  }

  /**
   * The model `model` names (resolved with `resolve`), or the Model object
   * itself, its usage added to the running turn: traced with telemetry on
   * ({@link traceModel}: a span per call, `agentd.tokens`), else only counted.
   * One wrapper per name or object and invocation.
   */
  model(model: string | Model, resolve: (name: string) => Model): Model {
    let wrapped = this.models.get(model);
    if (!wrapped) {
      const target = typeof model === "string" ? resolve(model) : model;
      const onUsage = (usage: Usage) => this.addUsage(usage);
      wrapped = this.instruments ? traceModel(target, { agent: this.agent, onUsage }) : countUsage(target, onUsage);
      this.models.set(model, wrapped);
    }
    return wrapped;
  }

  /** A turn starts: its usage starts at nothing; with telemetry on, its span starts. */
  beginTurn(turn: TurnIdentity): void {
    this.turnTokens = undefined;
    if (!this.instruments) return;
    const span = agentdTracer().startSpan(
      names.SPAN_TURN,
      {
        attributes: definedAttributes({
          [names.ATTR_AGENT]: this.agent,
          [names.ATTR_GEN_AI_AGENT_NAME]: this.agent,
          [names.ATTR_SESSION_ID]: this.sessionId,
          [names.ATTR_GEN_AI_CONVERSATION_ID]: this.sessionId,
          [names.ATTR_TURN_INDEX]: turn.turnIndex,
          [names.ATTR_SNAPSHOT_ID]: turn.snapshotId,
          [names.ATTR_PARENT_SNAPSHOT_ID]: turn.parentId,
          [names.ATTR_DETACHED]: this.detachedSpan !== undefined,
        }),
      },
      this.parent,
    );
    this.turn = { span, context: trace.setSpan(this.parent, span), startedAt: performance.now() };
  }

  /** Runs `fn` with the turn's span active (so model, tool and store spans nest under it). */
  runInTurn<T>(fn: () => Promise<T>): Promise<T> {
    return this.turn ? context.with(this.turn.context, fn) : fn();
  }

  /** Adds a model call's tokens to the running turn and to the invocation. */
  addUsage(usage: Usage): void {
    this.turnTokens = addUsage(this.turnTokens, usage);
    this.total = addUsage(this.total, usage);
  }

  /** Ends the turn's span and records its metrics. */
  endTurn(finishReason: FinishReason, snapshotId: string | undefined): void {
    const turn = this.turn;
    if (!turn) return;
    if (snapshotId) turn.span.setAttribute(names.ATTR_SNAPSHOT_ID, snapshotId);
    this.finishTurn(turn, finishReason);
  }

  /**
   * Ends the turn's span failed (status ERROR, exception event) and records its
   * metrics under `finishReason` ("failed", or "aborted" for a turn stopped by Abort).
   */
  failTurn(err: unknown, finishReason: FinishReason = "failed"): void {
    const turn = this.turn;
    if (!turn) return;
    recordFailure(turn.span, err);
    this.finishTurn(turn, finishReason);
  }

  /**
   * The invocation was detached: later turns (and the background row's store
   * writes) run under an `agentd.detached` span, a child of the invocation's
   * parent span (same trace) linked to the span active now (the one that
   * detached it).
   */
  detach(): void {
    if (!this.instruments || this.detachedSpan) return;
    const detacher = trace.getSpanContext(context.active());
    this.detachedSpan = agentdTracer().startSpan(
      names.SPAN_DETACHED,
      {
        attributes: { [names.ATTR_AGENT]: this.agent, [names.ATTR_SESSION_ID]: this.sessionId },
        ...(detacher ? { links: [{ context: detacher }] } : {}),
      },
      this.parent,
    );
    this.parent = trace.setSpan(this.parent, this.detachedSpan);
    this.instruments.detachedPending.add(1, this.agentAttributes);
  }

  /** Runs `fn` in the context later turns start from (the detached span's after detach). */
  runInInvocation<T>(fn: () => T): T {
    return this.instruments ? context.with(this.parent, fn) : fn();
  }

  /** The invocation ended (its background work too): ends the detached span and the gauges. Idempotent. */
  finish(error?: unknown, backgroundRowId?: string): void {
    if (this.finished || !this.instruments) return;
    this.finished = true;
    this.instruments.invocationsActive.add(-1, this.agentAttributes);
    const detached = this.detachedSpan;
    if (!detached) return;
    if (backgroundRowId) detached.setAttribute(names.ATTR_SNAPSHOT_ID, backgroundRowId);
    if (error) recordFailure(detached, error);
    detached.end();
    this.instruments.detachedPending.add(-1, this.agentAttributes);
  }

  private finishTurn(turn: RunningTurn, finishReason: FinishReason): void {
    const span = turn.span;
    span.setAttribute(names.ATTR_FINISH_REASON, finishReason);
    if (this.turnTokens) {
      span.setAttribute(names.ATTR_GEN_AI_USAGE_INPUT_TOKENS, this.turnTokens.inputTokens);
      span.setAttribute(names.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, this.turnTokens.outputTokens);
    }
    span.end();
    const attributes = { [names.ATTR_AGENT]: this.agent, [names.ATTR_FINISH_REASON]: finishReason };
    this.instruments?.turns.add(1, attributes);
    this.instruments?.turnDuration.record((performance.now() - turn.startedAt) / 1000, attributes);
    if (this.turn === turn) this.turn = undefined;
  }
}
