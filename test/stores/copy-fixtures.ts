// Stores populated through the store API for the copy-store tests: sessions of several owners and
// agents with checkpoints, deltas, a fork, labels, TTLs, leases, request IDs, a detached row, and
// pending webhook events; and the comparison of two stores, session by session.
import { expect } from "vitest";
import type { Message } from "../../src/types/content.js";
import type { SessionState } from "../../src/types/session-state.js";
import { digestOf, readSessionContent } from "../../stores/copy/session-content.js";
import { recordStateFields } from "../../stores/ledger/checkpoint-policy.js";
import { stateOfChain } from "../../stores/ledger/state-chain.js";
import { applyStateDelta, diffState } from "../../stores/ledger/state-delta.js";
import type { SessionHead, SessionStore, SnapshotRecord } from "../../stores/snapshot-store.js";
import { hasWebhookOutbox, type WebhookEvent } from "../../stores/webhook-outbox.js";

/** A fixed epoch (the sessions' timestamps count from it). */
const T0 = 1_760_000_000_000;

/** A year: the TTL of some sessions (far from expiring while a test runs). */
const YEAR_MS = 365 * 86_400_000;

function text(role: Message["role"], value: string): Message {
  return { role, content: [{ text: value }] };
}

/** A record ID that is unique per session and turn and reads well in failures. */
function snapshotIdOf(sessionId: string, turn: string): string {
  return `${sessionId}-${turn}`;
}

/** What {@link populate} wrote, to check a copy against. */
export interface Populated {
  sessionIds: string[];
  records: number;
  webhookEvents: WebhookEvent[];
}

/**
 * Writes `count` sessions into `store` through `commit`/`updateRecord` (and the webhook outbox):
 * session i has a checkpoint, two deltas (messages, custom-state patch, an artifact), every third
 * one a fork from its first turn, every 7th a TTL, every other one labels, every 4th the owner
 * "acme", every 10th a detached row still pending (work, a lease on the head, a heartbeat
 * update), every 25th a pending webhook event (with the record's webhook mark).
 */
export async function populate(store: SessionStore, count: number, prefix = "s"): Promise<Populated> {
  const populated: Populated = { sessionIds: [], records: 0, webhookEvents: [] };
  const outbox = hasWebhookOutbox(store) ? store.webhookOutbox() : undefined;
  for (let i = 0; i < count; i++) {
    const sessionId = `${prefix}${String(i).padStart(5, "0")}`;
    const at = T0 + i * 1000;
    const base: Omit<SessionHead, "version" | "headSnapshotId" | "turnCount"> = {
      sessionId,
      agent: i % 3 === 0 ? "assistant" : "tasks",
      owner: i % 4 === 0 ? "acme" : "",
      createdAt: at,
      updatedAt: at,
      ...(i % 2 === 0 ? { labels: { team: `t${i % 5}`, "app.kind": "copy" } } : {}),
      ...(i % 7 === 0 ? { ttlMs: YEAR_MS } : {}),
    };
    let head: SessionHead | undefined;
    const write = async (record: SnapshotRecord, extra: Partial<SessionHead> = {}, token?: string) => {
      head = await store.commit({
        expectedVersion: head?.version ?? 0,
        head: {
          ...base,
          headSnapshotId: record.snapshotId,
          turnCount: (head?.turnCount ?? 0) + 1,
          updatedAt: record.createdAt,
          ...extra,
        },
        record,
        ...(token ? { token } : {}),
      });
      if (!head) throw new Error(`commit of ${record.snapshotId} conflicted`);
      populated.records++;
    };
    const states: SessionState[] = [];
    const records: SnapshotRecord[] = [];
    const turn = async (
      index: number,
      parent: number | undefined,
      next: SessionState,
      extra: Partial<SnapshotRecord> = {},
    ) => {
      const parentRecord = parent === undefined ? undefined : records[parent];
      const delta = diffState(parent === undefined ? { messages: [], artifacts: [] } : states[parent]!, next);
      const record: SnapshotRecord = {
        snapshotId: snapshotIdOf(sessionId, `t${records.length}`),
        sessionId,
        ...(parentRecord ? { parentId: parentRecord.snapshotId } : {}),
        turnIndex: index,
        createdAt: at + records.length + 1,
        updatedAt: at + records.length + 1,
        status: "completed",
        finishReason: "stop",
        ...recordStateFields(parentRecord, delta, () => next, index),
        ...extra,
      };
      await write(record, {}, `req-${sessionId}-${records.length}`);
      states.push(next);
      records.push(record);
    };
    const s0: SessionState = {
      sessionId,
      messages: [text("user", `hello ${i}`), text("model", `echo: hello ${i}`)],
      artifacts: [],
      custom: { n: 0 },
    };
    await turn(0, undefined, s0);
    const s1 = applyStateDelta(s0, {
      keepMessages: 2,
      appendMessages: [text("user", `more ${i}`), text("model", `echo: more ${i}`)],
      customPatch: [{ op: "replace", path: "/n", value: 1 }],
    });
    await turn(1, 0, s1, {
      usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 },
      requestId: `req-${i}`,
      requestFingerprint: "f".repeat(64),
    });
    const s2 = applyStateDelta(s1, {
      keepMessages: 4,
      appendMessages: [text("user", `third ${i}`)],
      artifacts: [{ name: "notes", parts: [{ text: `notes of ${i}` }] }],
    });
    await turn(2, 1, s2);
    if (i % 3 === 0) {
      const fork = applyStateDelta(s0, { keepMessages: 1, appendMessages: [text("user", `edited ${i}`)] });
      await turn(1, 0, fork, { edit: { by: "anonymous", tenant: base.owner, messagesPatch: [] } });
    }
    if (i % 10 === 0) {
      const pending: SnapshotRecord = {
        snapshotId: snapshotIdOf(sessionId, "bg"),
        sessionId,
        parentId: records[2]!.snapshotId,
        turnIndex: 3,
        createdAt: at + 50,
        updatedAt: at + 50,
        status: "pending",
        depth: 0,
        deltaBytes: 0,
        checkpointBytes: 0,
        checkpointTurn: 3,
        work: {
          inputs: [],
          firstTurnIndex: 3,
          completed: 0,
          lastSequence: 0,
          runs: [{ invocationId: `inv-${i}`, instance: "old-host:1", startedAt: at + 50, fromInput: 0 }],
        } as never,
      };
      await write(pending, { lease: { invocationId: `inv-${i}`, expiresAt: at + 60_000 } });
      await store.updateRecord(pending.snapshotId, (r) => ({ ...r, heartbeatAt: at + 55 }));
    }
    if (i % 25 === 0 && outbox) {
      const event: WebhookEvent = {
        id: `msg_${sessionId}`,
        type: "invocation.completed",
        tenant: base.owner,
        agent: base.agent,
        sessionId,
        snapshotId: records[2]!.snapshotId,
        createdAt: at + 70,
        body: JSON.stringify({ type: "invocation.completed", data: { session_id: sessionId } }),
        url: "https://hooks.example/agentd",
        state: "pending",
        attempts: 1,
        nextAttemptAt: at + 90,
        lastAttemptAt: at + 71,
        lastError: "HTTP 503",
      };
      await store.updateRecord(records[2]!.snapshotId, (r) => ({
        ...r,
        webhook: { id: event.id, type: event.type, at: at + 70 },
      }));
      await outbox.put(event);
      populated.webhookEvents.push(event);
    }
    populated.sessionIds.push(sessionId);
  }
  return populated;
}

/**
 * Checks that `copy` holds every session of `source` as the source holds it: the head (all but
 * its version), every record, every snapshot's state read back through `getChain`, the
 * session's checksum, and every webhook event. Resolves to how many records it compared.
 */
export async function expectSameSessions(
  source: SessionStore,
  copy: SessionStore,
  populated: Populated,
): Promise<number> {
  let compared = 0;
  for (const sessionId of populated.sessionIds) {
    const head = (await source.getHead(sessionId))!;
    const copiedHead = await copy.getHead(sessionId);
    expect(copiedHead, sessionId).toBeDefined();
    const { version: _v1, ...sourceFields } = head;
    const { version: _v2, ...copiedFields } = copiedHead!;
    expect(copiedFields, sessionId).toEqual(sourceFields);
    const a = await readSessionContent(source, head);
    const b = await readSessionContent(copy, copiedHead!);
    expect(
      b.records.map((r) => r.snapshotId),
      sessionId,
    ).toEqual(a.records.map((r) => r.snapshotId));
    for (const [k, record] of a.records.entries()) {
      expect(b.records[k], record.snapshotId).toEqual(record);
      if (record.status === "pending") continue;
      const state = stateOfChain((await source.getChain(record.snapshotId))!);
      expect(stateOfChain((await copy.getChain(record.snapshotId))!), record.snapshotId).toEqual(state);
      compared++;
    }
    expect(digestOf(b), sessionId).toEqual(digestOf(a));
  }
  const outbox = hasWebhookOutbox(copy) ? copy.webhookOutbox() : undefined;
  for (const event of populated.webhookEvents) expect(await outbox?.get(event.id)).toEqual(event);
  return compared;
}
