import type { Document } from "mongodb";
import { startAgentd, type AgentdProcess } from "./agentd-process.js";
import type { MongoWireTap, TappedCommand } from "./mongo-wire-tap.js";

/** Commands that belong to no flow: connection handshakes, monitoring, sessions, change-stream cursors. */
const BACKGROUND = new Set([
  "hello",
  "isMaster",
  "ismaster",
  "ping",
  "endSessions",
  "buildInfo",
  "saslStart",
  "saslContinue",
  "killCursors",
  "getMore",
  "listIndexes",
  "createIndexes",
  "listCollections",
]);

/**
 * `<command> <collection>` of a command, with the collection's prefix kept (e.g. `update heads`);
 * `update heads settle` for the commit settlement's batched removal of settled tokens from a
 * head (only `$unset`s of `pendingCommits.*`), which a timer sends when no head write carried them
 * (stores/mongodb/commit-settlement.ts), so it may or may not fall within a given turn.
 */
export function commandKey(command: TappedCommand): string {
  const key = `${command.name} ${command.collection}`.trim();
  return command.name === "update" && isSettlementFlush(command.command) ? `${key} settle` : key;
}

/** True when every update of the command only unsets `pendingCommits.<token>` fields. */
function isSettlementFlush(command: Document): boolean {
  const updates = command.updates as Document[] | undefined;
  if (!updates?.length) return false;
  return updates.every((update) => {
    const u = update.u as Document | undefined;
    if (!u || Array.isArray(u) || Object.keys(u).join() !== "$unset") return false;
    const fields = Object.keys(u.$unset as Document);
    return fields.length > 0 && fields.every((field) => field.startsWith("pendingCommits."));
  });
}

/** True for a command of a flow (a read or write of the store's collections), not housekeeping. */
export function isFlowCommand(command: TappedCommand): boolean {
  if (BACKGROUND.has(command.name)) return false;
  const pipeline = command.command.pipeline as Document[] | undefined;
  if (command.name === "aggregate" && pipeline?.[0]?.$changeStream !== undefined) return false;
  return command.collection !== "" && command.collection !== "1";
}

/**
 * `agentd serve` on MongoDB through `tap` (database `database`), with the
 * heartbeat and lease timings short enough for crash tests.
 */
export function startAgentdOnTap(tap: MongoWireTap, database: string, args: string[] = []): Promise<AgentdProcess> {
  const uri = `mongodb://127.0.0.1:${tap.port}/${database}?directConnection=true&serverSelectionTimeoutMS=2000`;
  return startAgentd({ args: ["--store", uri, ...args] });
}

/** Records the flow commands `tap` sees while `flow` runs (and `settleMs` after it, for work it leaves running). */
export async function recordFlow(tap: MongoWireTap, flow: () => Promise<unknown>, settleMs = 300): Promise<string[]> {
  const seen: string[] = [];
  tap.failpoint = (command) => {
    if (isFlowCommand(command)) seen.push(commandKey(command));
    return "pass";
  };
  try {
    await flow();
    await new Promise((resolve) => setTimeout(resolve, settleMs));
  } finally {
    tap.failpoint = undefined;
  }
  return seen;
}

/** The n-th (0-based) occurrence of `key` in `keys` at position `index`: how a failpoint finds "the same" command again. */
export function occurrenceAt(keys: readonly string[], index: number): { key: string; occurrence: number } {
  const key = keys[index]!;
  return { key, occurrence: keys.slice(0, index).filter((k) => k === key).length };
}

/** The turns a client was told were committed, per session: snapshot IDs and their user inputs, in order. */
export class AcknowledgedTurns {
  readonly sessions = new Map<string, { snapshotIds: string[]; inputs: string[] }>();

  /** Records one acknowledged turn. */
  add(sessionId: string, snapshotId: string, input: string): void {
    let session = this.sessions.get(sessionId);
    if (!session) this.sessions.set(sessionId, (session = { snapshotIds: [], inputs: [] }));
    session.snapshotIds.push(snapshotId);
    session.inputs.push(input);
  }

  /** How many turns were acknowledged. */
  get count(): number {
    let n = 0;
    for (const session of this.sessions.values()) n += session.snapshotIds.length;
    return n;
  }
}

/** What {@link checkAcknowledged} found wrong; empty when every invariant holds. */
export interface Violations {
  /** Acknowledged snapshots that do not read back (ID: the error). */
  unreadable: string[];
  /** Sessions whose latest snapshot does not load (ID: the error). */
  brokenSessions: string[];
  /** Sessions whose history lacks an acknowledged input, or holds an input twice. */
  wrongHistory: string[];
}

/** A client of an agentd that can read snapshots (the generated AgentService client). */
export interface SnapshotReader {
  getSnapshot(
    request: { agent: string; snapshotId?: string; sessionId?: string },
    options?: { timeoutMs?: number },
  ): Promise<{
    snapshot?: {
      snapshotId: string;
      state?: { messages: { content: { kind: { case?: string; value?: unknown } }[] }[] };
    };
  }>;
}

/**
 * Checks every acknowledged turn through `client` (an agentd on the store):
 * each acknowledged snapshot reads back (its chain is whole, or the read
 * fails), each session's latest snapshot loads, and its history holds every
 * acknowledged input, in order, and no message twice (a turn applied twice).
 * `only`: check these sessions only.
 */
export async function checkAcknowledged(
  client: SnapshotReader,
  acknowledged: AcknowledgedTurns,
  only?: readonly string[],
  agent = "assistant",
): Promise<Violations> {
  const violations: Violations = { unreadable: [], brokenSessions: [], wrongHistory: [] };
  for (const [sessionId, session] of acknowledged.sessions) {
    if (only && !only.includes(sessionId)) continue;
    for (const snapshotId of session.snapshotIds) {
      try {
        const read = await client.getSnapshot({ agent, snapshotId }, { timeoutMs: 30_000 });
        if (read.snapshot?.snapshotId !== snapshotId) violations.unreadable.push(`${snapshotId}: not returned`);
      } catch (err) {
        violations.unreadable.push(`${snapshotId}: ${(err as Error).message}`);
      }
    }
    let texts: string[];
    try {
      const latest = await client.getSnapshot({ agent, sessionId }, { timeoutMs: 30_000 });
      texts = (latest.snapshot?.state?.messages ?? []).map((m) =>
        m.content.map((p) => (p.kind.case === "text" ? String(p.kind.value) : "")).join(""),
      );
    } catch (err) {
      violations.brokenSessions.push(`${sessionId}: ${(err as Error).message}`);
      continue;
    }
    const duplicated = texts.filter((text, i) => texts.indexOf(text) !== i);
    if (duplicated.length > 0) violations.wrongHistory.push(`${sessionId}: "${duplicated[0]}" twice`);
    let at = 0;
    for (const input of session.inputs) {
      const found = texts.indexOf(input, at);
      const twice = found >= 0 && texts.indexOf(input, found + 1) >= 0;
      if (found < 0 || twice) {
        violations.wrongHistory.push(`${sessionId}: input "${input}" ${found < 0 ? "missing" : "twice"}`);
        break;
      }
      at = found + 1;
    }
  }
  return violations;
}
