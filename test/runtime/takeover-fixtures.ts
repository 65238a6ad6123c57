// Several "server instances" in one process: registries sharing one memory store, each with
// its own instance ID and gate, for the takeover tests of detached work.
import type { Agent } from "../../src/runtime/agents/agent.js";
import { AgentRegistry, type AgentRegistryOptions } from "../../src/runtime/agents/agent-registry.js";
import type { WorkTakenOverEvent } from "../../src/runtime/invocations/runtime-events.js";
import { messageText } from "../../src/types/content.js";
import type { Principal } from "../../src/types/principal.js";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore, SnapshotRecord, StoreCallContext } from "../../stores/snapshot-store.js";
import { chunkLabels, register, Rendezvous, until } from "./runtime-fixtures.js";

/**
 * A worker is presumed dead after 60 s of silence (takeover window: 60 s
 * more), and no heartbeat falls within a test: no test waits for a TTL to
 * pass or races a short takeover window under load; {@link presumeDead} and
 * {@link presumeExpired} backdate a row's heartbeat instead.
 */
export const LIVENESS = { heartbeatIntervalMs: 20_000, heartbeatTtlMs: 60_000 };

/** One in-process instance. */
export interface Instance {
  name: string;
  registry: AgentRegistry;
  gate: Rendezvous;
  agent: Agent<unknown>;
  takenOver: WorkTakenOverEvent[];
  /** The principal of each turn the default agent ran here. */
  principals: Principal[];
}

/** Defines an instance's agent in its registry. */
export type AgentDefiner = (registry: AgentRegistry, gate: Rendezvous, name: string) => Agent<unknown>;

/**
 * Server instances sharing one memory store, each with agent "bg" (named
 * "other" where `agentOn` says no): a turn on "wait:<point>" blocks at its own
 * gate's <point>; every turn answers `<text> by <principal subject> on
 * <instance>`. `define` replaces that agent.
 */
export function instances(
  names: string[],
  options: Partial<AgentRegistryOptions> & {
    store?: SessionStore;
    agentOn?: (name: string) => boolean;
    define?: AgentDefiner;
  } = {},
): { store: InMemorySessionStore; all: Instance[] } {
  const store = (options.store ?? new InMemorySessionStore()) as InMemorySessionStore;
  const all = names.map((name) => {
    const takenOver: WorkTakenOverEvent[] = [];
    const principals: Principal[] = [];
    const registry = new AgentRegistry({
      defaultStore: store as SessionStore,
      instanceId: name,
      liveness: options.liveness ?? LIVENESS,
      events: { workTakenOver: (event) => takenOver.push(event) },
    });
    const gate = new Rendezvous();
    if (options.define)
      return { name, registry, gate, agent: options.define(registry, gate, name), takenOver, principals };
    const agent = register(registry, {
      name: options.agentOn?.(name) === false ? "other" : "bg",
      store: "default",
      turn: async (input, ctx) => {
        principals.push(ctx.principal);
        const text = messageText(input.message);
        if (text.startsWith("wait:")) await gate.at(text.slice(5), ctx.turn.signal);
        const reply = `${text} by ${ctx.principal.subject} on ${name}`;
        ctx.responder.sendModelChunk({ role: "model", content: [{ text: reply }] });
        ctx.session.addMessages({ role: "model", content: [{ text: reply }] });
      },
    });
    return { name, registry, gate, agent, takenOver, principals };
  });
  return { store, all };
}

/** The principal the tests detach work as. */
export const ANN: Principal = Object.freeze({ subject: "ann", tenant: "", claims: Object.freeze({ plan: "pro" }) });

/** Detaches inputs `texts` on `instance` (all queued before the first turn starts); resolves to the pending row's ID. */
export async function detachInputs(
  instance: Instance,
  texts: string[],
): Promise<{ sessionId: string; snapshotId: string }> {
  const connection = await instance.agent.connect({}, { principal: ANN });
  for (const text of texts.slice(0, -1)) connection.sendText(text);
  connection.send({ message: { role: "user", content: [{ text: texts.at(-1)! }] }, detach: true });
  const output = await connection.output();
  return { sessionId: output.sessionId, snapshotId: output.snapshotId! };
}

/**
 * Detaches one input on `instance` that stops at gate point "one", then shuts
 * the instance's background work down there (a drain with no grace): the row
 * stays pending and its worker is gone, as after a dead instance.
 */
export async function detachThenShutDown(instance: Instance): Promise<{ sessionId: string; snapshotId: string }> {
  const key = await detachInputs(instance, ["wait:one"]);
  await instance.gate.reached("one");
  await instance.registry.background.drain(0);
  return key;
}

/** A record that must exist. */
export async function row(store: SessionStore, snapshotId: string): Promise<SnapshotRecord> {
  return (await store.getRecord(snapshotId))!;
}

/** Sets the heartbeat of the row `snapshotId` to `agoMs` before now, as a worker silent since then would have left it. */
async function backdate(store: SessionStore, snapshotId: string, agoMs: number, ctx?: StoreCallContext): Promise<void> {
  const written = await store.updateRecord(snapshotId, (r) => ({ ...r, heartbeatAt: Date.now() - agoMs }), ctx);
  if (!written) throw new Error(`no row ${snapshotId} to backdate`);
}

/**
 * Makes the row `snapshotId`'s worker look dead to instances with
 * {@link LIVENESS}: its heartbeat 1.5 TTLs old, halfway through the takeover
 * window (the worker must be stopped or stalled: a heartbeat of its own would
 * bring it back to life).
 */
export function presumeDead(store: SessionStore, snapshotId: string, ctx?: StoreCallContext): Promise<void> {
  return backdate(store, snapshotId, 1.5 * LIVENESS.heartbeatTtlMs, ctx);
}

/** Makes the row `snapshotId` look as if its takeover window had closed unused (its heartbeat 2.5 TTLs old): it reads expired. */
export function presumeExpired(store: SessionStore, snapshotId: string, ctx?: StoreCallContext): Promise<void> {
  return backdate(store, snapshotId, 2.5 * LIVENESS.heartbeatTtlMs, ctx);
}

/** Every recorded chunk of a detached run. */
export async function chunksOf(store: InMemorySessionStore, key: { sessionId: string; snapshotId: string }) {
  return store.readChunks(key, 0, 1_000);
}

/** {@link chunkLabels}, with `takeover:<supersededAfter>:<turnIndex>` for takeover markers. */
export function labels(chunks: { chunk: AgentStreamChunk }[]): string[] {
  return chunkLabels(chunks.map((c) => c.chunk)).map((label, i) =>
    chunks[i]!.chunk.takeover
      ? `takeover:${chunks[i]!.chunk.takeover.supersededAfter}:${chunks[i]!.chunk.takeover.turnIndex}`
      : label,
  );
}

/**
 * Presumes the worker of the row `snapshotId` dead ({@link presumeDead}),
 * then runs `instance`'s takeover poller (its first pass at once) until the
 * row reads `status` (stored), then stops it (also when waiting fails).
 */
export async function takeOverUntil(
  instance: Instance,
  store: SessionStore,
  snapshotId: string,
  status: SnapshotRecord["status"],
): Promise<void> {
  await presumeDead(store, snapshotId);
  const stop = instance.registry.startWorkTakeover();
  try {
    await until(async () => (await row(store, snapshotId)).status === status, `the row to read ${status}`);
  } finally {
    await stop();
  }
}

/**
 * Instances A and B on one memory store, where A never heartbeats during a
 * test and has a TTL of 150 ms: once its turn has stalled for 75 ms (half
 * that), the first chunk after the stall makes it read its row first, as a
 * stalled process's would. B takes over once {@link presumeDead} says so.
 */
/** The heartbeat TTL of the stalled instance of {@link stalledAndSurvivor}. */
export const A_STALLED_TTL_MS = 150;

/**
 * Lets the stall of {@link stalledAndSurvivor}'s A last one more
 * {@link A_STALLED_TTL_MS}, past half its TTL, so that it reads its row when
 * it wakes (a lower bound only: a loaded machine makes the stall longer,
 * which changes nothing).
 */
export function stallPastTtl(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, A_STALLED_TTL_MS));
}

export function stalledAndSurvivor(): { shared: InMemorySessionStore; a: Instance; b: Instance } {
  const shared = new InMemorySessionStore();
  const [a] = instances(["A"], {
    store: shared,
    liveness: { heartbeatIntervalMs: 60_000, heartbeatTtlMs: A_STALLED_TTL_MS },
  }).all;
  const [b] = instances(["B"], { store: shared }).all;
  return { shared, a: a!, b: b! };
}
