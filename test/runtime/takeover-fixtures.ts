// Several "server instances" in one process: registries sharing one memory store, each with
// its own instance ID and gate, for the takeover tests of detached work.
import type { Agent } from "../../src/runtime/agents/agent.js";
import { AgentRegistry, type AgentRegistryOptions } from "../../src/runtime/agents/agent-registry.js";
import type { WorkTakenOverEvent } from "../../src/runtime/invocations/runtime-events.js";
import { messageText } from "../../src/types/content.js";
import type { Principal } from "../../src/types/principal.js";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { InMemorySessionStore } from "../../stores/memory-store.js";
import type { SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";
import { chunkLabels, register, Rendezvous, until } from "./runtime-fixtures.js";

/** Heartbeats every 20 ms; a row silent for 150 ms is presumed dead (takeover window: 150 ms more). */
export const FAST = { heartbeatIntervalMs: 20, heartbeatTtlMs: 150 };

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
      liveness: options.liveness ?? FAST,
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

/** Waits until the row `snapshotId`'s heartbeat is older than the heartbeat TTL of {@link FAST}: its worker looks dead. */
export async function untilSilent(store: SessionStore, snapshotId: string): Promise<void> {
  await until(async () => Date.now() - (await row(store, snapshotId)).heartbeatAt! > FAST.heartbeatTtlMs, "silence");
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
 * Runs `instance`'s takeover poller until the row `snapshotId` reads
 * `status` (stored), then stops it (also when waiting fails).
 */
export async function takeOverUntil(
  instance: Instance,
  store: SessionStore,
  snapshotId: string,
  status: SnapshotRecord["status"],
): Promise<void> {
  const stop = instance.registry.startWorkTakeover();
  try {
    await until(async () => (await row(store, snapshotId)).status === status, `the row to read ${status}`);
  } finally {
    await stop();
  }
}

/**
 * Instances A and B on one memory store, where A never heartbeats during a
 * test (its interval is a minute, its TTL 150 ms): A's row goes silent while
 * its turn still runs, as a stalled process's would.
 */
export function stalledAndSurvivor(): { shared: InMemorySessionStore; a: Instance; b: Instance } {
  const shared = new InMemorySessionStore();
  const [a] = instances(["A"], { store: shared, liveness: { heartbeatIntervalMs: 60_000, heartbeatTtlMs: 150 } }).all;
  const [b] = instances(["B"], { store: shared }).all;
  return { shared, a: a!, b: b! };
}
