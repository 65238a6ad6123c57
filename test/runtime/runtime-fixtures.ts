// Shared helpers of the in-process runtime unit tests: a registry on the memory
// store, agents whose turns block on promises the test controls, and stream readers.
import { expect, vi } from "vitest";
import { AgentError } from "../../src/errors/agent-error.js";
import type { Agent } from "../../src/runtime/agents/agent.js";
import type { AgentConnection } from "../../src/runtime/agents/agent-connection.js";
import { AgentRegistry, type AgentRegistryOptions } from "../../src/runtime/agents/agent-registry.js";
import type { TurnFn } from "../../src/runtime/agents/agent-function.js";
import { defineCustomAgent, type CustomAgentDefinition } from "../../src/runtime/agents/custom-agent.js";
import type { AgentStreamChunk, TurnEnd } from "../../src/types/agent-io.js";
import { messageText } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import type { SessionHead, SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";
import { uuidv7 } from "../../stores/uuid-v7.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import { until as untilProbe } from "../harness/until.js";

export { expectAgentError, expectThrowsAgentError } from "../harness/agent-error-expectations.js";

// The runtime reaches the AI SDK only through hosted models (`openai/…`, `google/…`, `anthropic/…`), which these
// tests never call: replacing the package with an empty module saves loading it in every test file (~0.1 s each).
// Hoisted by vitest above the imports, so the runtime modules imported here see the empty module.
vi.mock("ai", () => ({}));

/** A promise with its resolve/reject exposed. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** A new {@link Deferred}. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * Named meeting points between agent code and the test: agent code calls
 * `at(name, signal)` and blocks there until the test calls `release(name)` (or
 * `signal` aborts, which rejects with its reason); the test awaits
 * `reached(name)` to know the agent got there. No timers involved.
 */
export class Rendezvous {
  private readonly arrivals = new Map<string, Deferred<void>>();
  private readonly releases = new Map<string, Deferred<void>>();

  private slot(map: Map<string, Deferred<void>>, name: string): Deferred<void> {
    let d = map.get(name);
    if (!d) map.set(name, (d = deferred()));
    return d;
  }

  /** Agent side: announces arrival at `name`, then waits for its release (or the abort of `signal`). */
  async at(name: string, signal?: AbortSignal): Promise<void> {
    this.slot(this.arrivals, name).resolve();
    const release = this.slot(this.releases, name).promise;
    if (!signal) return release;
    if (signal.aborted) throw signal.reason;
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      void release.then(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  /** Agent side: announces arrival at `name` without waiting. */
  mark(name: string): void {
    this.slot(this.arrivals, name).resolve();
  }

  /** Test side: resolves once agent code has reached `name`. */
  reached(name: string): Promise<void> {
    return this.slot(this.arrivals, name).promise;
  }

  /** Test side: lets agent code waiting at `name` (now or later) continue. */
  release(name: string): void {
    this.slot(this.releases, name).resolve();
  }
}

/** A registry on a fresh memory store (the default store of its agents). */
export interface Harness {
  store: InMemorySessionStore;
  registry: AgentRegistry;
}

/** A registry whose default store is a fresh {@link InMemorySessionStore}. */
export function harness(options: Omit<AgentRegistryOptions, "defaultStore"> = {}): Harness {
  const store = new InMemorySessionStore();
  const registry = new AgentRegistry({ defaultStore: store as SessionStore, ...options });
  return { store, registry };
}

/** Waits until every detached run of the registry has finished (within 4 s). */
export async function backgroundDone(h: Harness): Promise<void> {
  expect(await h.registry.background.drain(4_000)).toBe(0);
}

/** Defines a custom agent and registers it in `registry`. */
export function register<S = unknown>(registry: AgentRegistry, definition: CustomAgentDefinition<S>): Agent<S> {
  const agent = defineCustomAgent<S>(definition);
  registry.register(agent);
  return agent;
}

/** A turn that answers `reply: <user text>` as one model chunk and one model message. */
export const replyTurn: TurnFn<unknown> = async (input, ctx) => {
  const text = `reply: ${messageText(input.message)}`;
  ctx.responder.sendModelChunk({ role: "model", content: [{ text }] });
  ctx.session.addMessages({ role: "model", content: [{ text }] });
};

/**
 * An agent (named "bg" unless `options.name` says otherwise, on the default store) whose turn on
 * text "wait:<point>" blocks at rendezvous point <point> until released. When the turn's signal
 * aborts it instead, the reason is kept in `options.reasons` under <point> and the points
 * "<point> aborted" and "<point> aborted:<STATUS>" are marked. Text starting "fail" fails the
 * turn with INTERNAL, "abort" with ABORTED; every turn that gets through answers as {@link replyTurn}.
 */
export function gatedAgent(
  h: Harness,
  gate: Rendezvous,
  options: { name?: string; reasons?: Map<string, AgentError> } = {},
): Agent<unknown> {
  return register(h.registry, {
    name: options.name ?? "bg",
    store: "default",
    turn: async (input, ctx) => {
      const text = messageText(input.message);
      if (text.startsWith("wait:")) {
        const point = text.slice(5);
        await gate.at(point, ctx.turn.signal).catch((err) => {
          const reason = AgentError.from(err);
          options.reasons?.set(point, reason);
          gate.mark(`${point} aborted`);
          gate.mark(`${point} aborted:${reason.status}`);
          throw err;
        });
      }
      if (text.startsWith("fail")) throw new AgentError("INTERNAL", `failed on ${text}`);
      if (text.startsWith("abort")) throw new AgentError("ABORTED", "gave up");
      await replyTurn(input, ctx);
    },
  });
}

/** What a drained stream held: every chunk, and the error it ended with (if any). */
export interface Drained {
  chunks: AgentStreamChunk[];
  error: unknown;
}

/** Reads a connection's stream to its end; never rejects. */
export async function drain(connection: AgentConnection<unknown>): Promise<Drained> {
  const chunks: AgentStreamChunk[] = [];
  try {
    for await (const chunk of connection.stream) chunks.push(chunk);
    return { chunks, error: undefined };
  } catch (error) {
    return { chunks, error };
  }
}

/** The turnEnd chunks of a stream, in order. */
export function turnEndsOf(chunks: AgentStreamChunk[]): TurnEnd[] {
  return chunks.flatMap((c) => (c.turnEnd ? [c.turnEnd] : []));
}

/** A compact label per chunk, e.g. `text:reply: a`, `turnEnd:0:stop`, `patch:replace:`, `artifact:notes`. */
export function chunkLabels(chunks: AgentStreamChunk[]): string[] {
  return chunks.map((c) => {
    if (c.modelChunk) return `text:${c.modelChunk.content.map((p) => p.text ?? "").join("")}`;
    if (c.turnEnd) return `turnEnd:${c.turnEnd.turnIndex}:${c.turnEnd.finishReason}`;
    if (c.customPatch) return `patch:${c.customPatch.map((op) => `${op.op}:${op.path}`).join(",")}`;
    if (c.artifact) return `artifact:${c.artifact.name ?? ""}`;
    return "other";
  });
}

/** Every record of a session in the store, oldest first. */
export async function recordsOf<S>(store: SessionStore<S>, sessionId: string): Promise<SnapshotRecord<S>[]> {
  const page = await store.listRecords(sessionId, { pageSize: 1000 });
  return [...page.records].reverse();
}

/** The texts of a state's messages, as `role:text`. */
export function historyOf(
  state: { messages: readonly { role: string; content: { text?: string }[] }[] } | undefined,
): string[] {
  return (state?.messages ?? []).map((m) => `${m.role}:${m.content.map((p) => p.text ?? "").join("")}`);
}

/**
 * Resolves once `predicate()` holds (for store effects without an event),
 * re-checking every millisecond; gives up after `timeoutMs`, by default the
 * 30 s of `test/harness/until.ts` (a safety net on a loaded machine: the
 * wait ends at the event, not at a guess of how fast it comes).
 */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs?: number,
): Promise<void> {
  await untilProbe(what, predicate, { intervalMs: 1, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
}

/** What {@link appendRecord} writes besides the lineage. */
export interface AppendedRecord {
  status: SnapshotRecord["status"];
  turnIndex: number;
  /** Defaults to the session head's snapshot; null for none. */
  parentId?: string | null;
  heartbeatAt?: number;
  updatedAt?: number;
  /** The whole state (a checkpoint); a pending-like row without one when unset. */
  checkpoint?: SnapshotRecord["checkpoint"];
  /** The detached work a pending row records. */
  work?: SnapshotRecord["work"];
}

/**
 * Writes a record into an existing session as another process would (a commit
 * that moves the head to it), keeping the head's lease and waiters. Resolves to its ID.
 */
export async function appendRecord<S>(
  store: SessionStore<S>,
  sessionId: string,
  fields: AppendedRecord,
): Promise<string> {
  const head = await store.getHead(sessionId);
  if (!head) throw new Error(`no session ${sessionId}`);
  const snapshotId = uuidv7();
  const now = Date.now();
  const parentId = fields.parentId === null ? undefined : (fields.parentId ?? head.headSnapshotId);
  const record: SnapshotRecord<S> = {
    snapshotId,
    sessionId,
    ...(parentId ? { parentId } : {}),
    turnIndex: fields.turnIndex,
    createdAt: now,
    updatedAt: fields.updatedAt ?? now,
    ...(fields.heartbeatAt !== undefined ? { heartbeatAt: fields.heartbeatAt } : {}),
    status: fields.status,
    ...(fields.checkpoint ? { checkpoint: fields.checkpoint as SessionState<S> } : {}),
    ...(fields.work ? { work: fields.work } : {}),
    depth: 0,
    deltaBytes: 0,
    checkpointBytes: 0,
    checkpointTurn: fields.turnIndex,
  };
  const { version, ...rest } = head;
  const next = { ...rest, headSnapshotId: snapshotId, turnCount: head.turnCount + 1 };
  const stored = await store.commit({ expectedVersion: version, head: next, record });
  if (!stored) throw new Error("appendRecord: head changed meanwhile");
  return snapshotId;
}

/** Sets (or with `undefined` removes) the lease of a session's head, as another process holding it would. */
export async function setLease(
  store: SessionStore,
  sessionId: string,
  lease: SessionHead["lease"],
): Promise<SessionHead> {
  const head = await store.getHead(sessionId);
  if (!head) throw new Error(`no session ${sessionId}`);
  const { version, lease: _lease, ...rest } = head;
  const stored = await store.commit({ expectedVersion: version, head: { ...rest, ...(lease ? { lease } : {}) } });
  if (!stored) throw new Error("setLease: head changed meanwhile");
  return stored;
}
