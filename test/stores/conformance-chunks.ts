import { describe, expect, it } from "vitest";
import type { AgentStreamChunk } from "../../src/types/agent-io.js";
import { isChunkLog, type ChunkLog, type ChunkLogKey, type StoredChunk } from "../../stores/chunk-log.js";
import type { SessionStore, StoreCallContext } from "../../stores/snapshot-store.js";
import { expectAgentError, expectThrowsAgentError } from "../harness/agent-error-expectations.js";
import { chunk, chunks } from "./chunk-factory.js";
import type { ConformanceOptions, StoreUnderTest } from "./conformance.js";
import { crossProcessOf, runChildWriter } from "./shared-store.js";
import { commitOf, eventually, pendingRecord, sleep, T0, type CounterState } from "./snapshot-factory.js";

type LogStore = SessionStore<CounterState> & ChunkLog;

/** The store under test as a chunk log; every store must implement it (the test fails otherwise). */
async function chunkStore(fresh: () => Promise<StoreUnderTest>): Promise<StoreUnderTest & { log: LogStore }> {
  const t = await fresh();
  if (!isChunkLog(t.store)) throw new Error("the store does not implement ChunkLog (appendChunks, watchChunks, …)");
  return { ...t, log: t.store };
}

/**
 * Keep-until times an hour ahead of the real clock: a MongoDB TTL monitor
 * (MONGODB_URI pointing at a real server) never removes a chunk during a
 * test, so only `sweepChunks` does.
 */
const HOUR = 3_600_000;

const key = (snapshotId: string, sessionId = "s1"): ChunkLogKey => ({ sessionId, snapshotId });

/** Creates session `sessionId` with the pending row `snapshotId` (a detached run's), so its log has a session to go with. */
async function detachedRow(store: LogStore, sessionId: string, snapshotId: string, ttlMs?: number): Promise<void> {
  const commit = commitOf(undefined, pendingRecord(sessionId, snapshotId));
  const head = await store.commit(ttlMs === undefined ? commit : { ...commit, head: { ...commit.head, ttlMs } });
  if (!head) throw new Error(`creating ${sessionId} conflicted`);
}

/** A running `watchChunks` whose wake-ups are counted. */
interface Watch {
  /** Wake-ups taken so far. */
  readonly wakes: number;
  /** Resolves once `n` wake-ups have been taken; rejects (failing the test) after `timeoutMs`. */
  untilWakes(n: number, timeoutMs?: number): Promise<void>;
  /** Resolves when the iteration ends (rejects with what it threw). */
  readonly ended: Promise<void>;
  /** Aborts the watch and waits for its iteration to end. */
  stop(): Promise<void>;
}

function startWatch(log: ChunkLog, logKey: ChunkLogKey, ctx?: StoreCallContext): Watch {
  const controller = new AbortController();
  const iterable = log.watchChunks(logKey, controller.signal, ctx);
  let wakes = 0;
  const waiters = new Set<() => void>();
  const ended = (async () => {
    for await (const _wake of iterable) {
      wakes++;
      for (const check of [...waiters]) check();
      // A reader does I/O per wake-up; letting timers run here also keeps a watcher that wrongly
      // yields for ever from starving the test's own timeouts.
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  ended.catch(() => {});
  return {
    get wakes() {
      return wakes;
    },
    untilWakes(n, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${n} wake-up(s) within ${timeoutMs} ms, got ${wakes}`));
        }, timeoutMs);
        const check = (): void => {
          if (wakes < n) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
    ended,
    stop: async () => {
      controller.abort();
      await ended;
    },
  };
}

/**
 * How long a negative wake-up check waits, once the watcher has settled: a
 * watcher that (wrongly) took an append made before it for a new one would
 * say so at once (an in-process delivery, an fs.watch event, MongoDB's
 * catch-up read, all done by the time it settles) or at its next poll (the
 * file store's fallback poll runs every 500 ms). 700 ms covers one poll.
 */
const QUIET_MS = 700;

/**
 * The chunk log of detached work ({@link ChunkLog}): append/read order and
 * paging, existence, keep-until and sweeps (whole logs), removal with the
 * session (nothing left behind), wake-ups (after the call only, in this
 * process and, for shared stores, from another), tenant separation (stores
 * that map tenants to places), and argument checks.
 */
export function describeChunks(fresh: () => Promise<StoreUnderTest>, name: string, options: ConformanceOptions): void {
  describe("chunk log", () => {
    describe("appendChunks and readChunks", () => {
      it("returns appended chunks in sequence order, each once, across appends", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), chunks(1, 3), Date.now() + HOUR);
        await log.appendChunks(key("bg"), [chunk(4)], Date.now() + HOUR);
        await log.appendChunks(key("bg"), chunks(5, 6), Date.now() + HOUR);
        expect(await log.readChunks(key("bg"), 0, 100)).toEqual(chunks(1, 6));
      });

      it("stores a large append whole and in order (more chunks than one statement holds)", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), chunks(1, 400), Date.now() + HOUR);
        expect(await log.readChunks(key("bg"), 0, 1000)).toEqual(chunks(1, 400));
      });

      it("returns only the chunks after afterSequence, at most limit of them", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), chunks(1, 6), Date.now() + HOUR);
        expect(await log.readChunks(key("bg"), 2, 3)).toEqual(chunks(3, 5));
        expect(await log.readChunks(key("bg"), 0, 1)).toEqual([chunk(1)]);
        expect(await log.readChunks(key("bg"), 5, 10)).toEqual([chunk(6)]);
        expect(await log.readChunks(key("bg"), 6, 10)).toEqual([]);
        expect(await log.readChunks(key("bg"), 99, 10)).toEqual([]);
        expect(await log.readChunks(key("bg"), 0, 0)).toEqual([]);
      });

      it("keeps a log that starts after sequence 1 (chunks streamed before detach are not recorded)", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), chunks(41, 43), Date.now() + HOUR);
        expect(await log.readChunks(key("bg"), 0, 10)).toEqual(chunks(41, 43));
        expect(await log.readChunks(key("bg"), 41, 10)).toEqual(chunks(42, 43));
      });

      it("returns each chunk as its JSON parses: nested values, unicode and $- or dotted keys round-trip", async () => {
        const { log } = await chunkStore(fresh);
        const odd = {
          sequence: 1,
          customPatch: [
            { op: "add", path: "/a.b", value: { $set: { "x.y": [1, "two", null, true, 1.5, 2 ** 53 - 1] } } },
          ],
          artifact: { name: "notes 😀 — ünïcode", parts: [{ text: 'line\nbreak "quoted" \u2028' }] },
          modelChunk: { role: "model", content: [{ text: "" }], index: undefined },
        } as unknown as AgentStreamChunk;
        await log.appendChunks(key("bg"), [{ sequence: 1, chunk: odd }], Date.now() + HOUR);
        const [read] = await log.readChunks(key("bg"), 0, 10);
        expect(read).toEqual({ sequence: 1, chunk: JSON.parse(JSON.stringify(odd)) });
        expect(read!.chunk.modelChunk).not.toHaveProperty("index"); // dropped as JSON drops it
      });

      it("finds a log only under the session it was appended with", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg", "s1"), chunks(1, 2), Date.now() + HOUR);
        expect(await log.readChunks(key("bg", "s2"), 0, 10)).toEqual([]);
        expect(await log.hasChunks(key("bg", "s2"))).toBe(false);
        expect(await log.readChunks(key("bg", "s1"), 0, 10)).toEqual(chunks(1, 2));
      });

      it("keeps the logs of two snapshots of one session apart", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg-1"), chunks(1, 2), Date.now() + HOUR);
        await log.appendChunks(key("bg-2"), [chunk(1, "other run")], Date.now() + HOUR);
        expect(await log.readChunks(key("bg-1"), 0, 10)).toEqual(chunks(1, 2));
        expect(await log.readChunks(key("bg-2"), 0, 10)).toEqual([chunk(1, "other run")]);
      });
    });

    describe("hasChunks", () => {
      it("tells a log that exists from one never appended to", async () => {
        const { log } = await chunkStore(fresh);
        expect(await log.hasChunks(key("bg"))).toBe(false);
        expect(await log.readChunks(key("bg"), 0, 10)).toEqual([]);
        await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
        expect(await log.hasChunks(key("bg"))).toBe(true);
        expect(await log.hasChunks(key("bg-other"))).toBe(false);
      });
    });

    describe("keep-until and sweepChunks", () => {
      it("removes only the logs whose keep-until time has passed, each whole", async () => {
        const { log } = await chunkStore(fresh);
        const K = Date.now() + HOUR;
        await log.appendChunks(key("short"), chunks(1, 3), K);
        await log.appendChunks(key("long"), chunks(1, 3), K + 1000);
        expect(await log.sweepChunks(K - 1)).toBe(0);
        expect(await log.readChunks(key("short"), 0, 10)).toEqual(chunks(1, 3));
        expect(await log.sweepChunks(K)).toBe(1);
        expect(await log.hasChunks(key("short"))).toBe(false);
        expect(await log.readChunks(key("short"), 0, 10)).toEqual([]);
        expect(await log.readChunks(key("long"), 0, 10)).toEqual(chunks(1, 3));
        expect(await log.sweepChunks(K + 1000)).toBe(1);
        expect(await log.hasChunks(key("long"))).toBe(false);
      });

      it("moves the keep-until time later with an append, never earlier", async () => {
        const { log } = await chunkStore(fresh);
        const K = Date.now() + HOUR;
        await log.appendChunks(key("bg"), [chunk(1)], K);
        await log.appendChunks(key("bg"), [chunk(2)], K + 1000); // later: moves it
        expect(await log.sweepChunks(K)).toBe(0);
        await log.appendChunks(key("bg"), [chunk(3)], K + 10); // earlier: K + 1000 stays
        expect(await log.sweepChunks(K + 999)).toBe(0);
        expect(await log.readChunks(key("bg"), 0, 10)).toEqual(chunks(1, 3));
        expect(await log.sweepChunks(K + 1000)).toBe(1);
      });

      it("sets the keep-until time with keepChunks, earlier or later", async () => {
        const { log } = await chunkStore(fresh);
        const K = Date.now() + HOUR;
        await log.appendChunks(key("bg"), chunks(1, 2), K);
        await log.keepChunks(key("bg"), K + 5000);
        expect(await log.sweepChunks(K + 4999)).toBe(0);
        await log.keepChunks(key("bg"), K - 5000);
        expect(await log.sweepChunks(K - 5001)).toBe(0);
        expect(await log.sweepChunks(K - 5000)).toBe(1);
        expect(await log.hasChunks(key("bg"))).toBe(false);
      });

      it("creates nothing when keepChunks names a log that does not exist", async () => {
        const { log, footprint } = await chunkStore(fresh);
        await detachedRow(log, "s1", "bg");
        await log.appendChunks(key("bg-earlier"), [chunk(1)], Date.now() + HOUR); // the session holds another log
        const before = await footprint?.();
        await log.keepChunks(key("bg"), Date.now() + HOUR);
        expect(await log.hasChunks(key("bg"))).toBe(false);
        if (footprint) expect(await footprint()).toEqual(before);
      });

      it("leaves nothing of a swept log behind", async () => {
        const { log, footprint } = await chunkStore(fresh);
        const K = Date.now() + HOUR;
        await detachedRow(log, "kept", "kept-bg");
        await detachedRow(log, "done", "done-bg");
        await log.appendChunks(key("kept-bg", "kept"), chunks(1, 2), K + 1000);
        const baseline = await footprint?.();
        await log.appendChunks(key("done-bg", "done"), chunks(1, 5), K);
        if (footprint) expect(await footprint()).not.toEqual(baseline);
        expect(await log.sweepChunks(K)).toBe(1);
        if (footprint) expect(await footprint()).toEqual(baseline);
        expect(await log.readChunks(key("kept-bg", "kept"), 0, 10)).toEqual(chunks(1, 2));
      });
    });

    describe("removal with the session", () => {
      it("deleteSession removes every chunk log of the session and only those, leaving nothing behind", async () => {
        const { log, footprint } = await chunkStore(fresh);
        if (!log.deleteSession) throw new Error("the store does not implement deleteSession");
        await detachedRow(log, "kept", "kept-bg");
        await log.appendChunks(key("kept-bg", "kept"), chunks(1, 2), Date.now() + HOUR);
        const baseline = await footprint?.();
        await detachedRow(log, "doomed", "doomed-bg");
        await log.appendChunks(key("doomed-bg", "doomed"), chunks(1, 3), Date.now() + HOUR);
        await log.appendChunks(key("doomed-bg-2", "doomed"), chunks(1, 2), Date.now() + HOUR);
        expect(await log.deleteSession("doomed")).toBe(true);
        expect(await log.hasChunks(key("doomed-bg", "doomed"))).toBe(false);
        expect(await log.hasChunks(key("doomed-bg-2", "doomed"))).toBe(false);
        expect(await log.readChunks(key("doomed-bg", "doomed"), 0, 10)).toEqual([]);
        if (footprint) expect(await footprint()).toEqual(baseline);
        expect(await log.readChunks(key("kept-bg", "kept"), 0, 10)).toEqual(chunks(1, 2));
      });

      it("deleteSession removes the chunk logs of a session that has no head", async () => {
        const { log, footprint } = await chunkStore(fresh);
        if (!log.deleteSession) throw new Error("the store does not implement deleteSession");
        await detachedRow(log, "kept", "kept-bg");
        await log.appendChunks(key("kept-bg", "kept"), [chunk(1)], Date.now() + HOUR);
        const baseline = await footprint?.();
        await log.appendChunks(key("orphan-bg", "gone"), chunks(1, 2), Date.now() + HOUR);
        expect(await log.deleteSession("gone")).toBe(true);
        expect(await log.hasChunks(key("orphan-bg", "gone"))).toBe(false);
        expect(await log.deleteSession("gone")).toBe(false);
        if (footprint) expect(await footprint()).toEqual(baseline);
      });

      it("sweepExpired removes the chunk logs of an expired session, leaving nothing behind", async () => {
        const { log, footprint } = await chunkStore(fresh);
        if (!log.sweepExpired) throw new Error("the store does not implement sweepExpired");
        await detachedRow(log, "forever", "forever-bg");
        await log.appendChunks(key("forever-bg", "forever"), [chunk(1)], Date.now() + HOUR);
        const baseline = await footprint?.();
        await detachedRow(log, "short", "short-bg", 50); // expires at T0 + 50
        await log.appendChunks(key("short-bg", "short"), chunks(1, 3), Date.now() + HOUR);
        expect(await log.sweepExpired(T0 + 50)).toBe(1);
        expect(await log.hasChunks(key("short-bg", "short"))).toBe(false);
        if (footprint) expect(await footprint()).toEqual(baseline);
        expect(await log.readChunks(key("forever-bg", "forever"), 0, 10)).toEqual([chunk(1)]);
      });
    });

    describe("watchChunks", () => {
      it("wakes for an append made after the call", async () => {
        const { log } = await chunkStore(fresh);
        const watch = startWatch(log, key("bg"));
        try {
          await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
          await watch.untilWakes(1);
          expect(await log.readChunks(key("bg"), 0, 10)).toEqual([chunk(1)]);
        } finally {
          await watch.stop();
        }
      });

      it("wakes once per append taken apart: not again for the same append, again for the next", async () => {
        const { log } = await chunkStore(fresh);
        const watch = startWatch(log, key("bg"));
        try {
          await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
          await watch.untilWakes(1);
          // Bounded negative check (see QUIET_MS): the append already reported is not reported again.
          await sleep(QUIET_MS);
          expect(watch.wakes).toBe(1);
          await log.appendChunks(key("bg"), chunks(2, 3), Date.now() + HOUR);
          await watch.untilWakes(2);
        } finally {
          await watch.stop();
        }
      });

      it("does not wake for appends made before the call", async () => {
        const { log, watchersSettled } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), chunks(1, 3), Date.now() + HOUR);
        const watch = startWatch(log, key("bg"));
        try {
          await eventually(() => watchersSettled?.() ?? true);
          // Bounded negative check (see QUIET_MS): no wake-up for the three chunks already there.
          await sleep(QUIET_MS);
          expect(watch.wakes).toBe(0);
          // The watcher was live all along: the next append wakes it.
          await log.appendChunks(key("bg"), [chunk(4)], Date.now() + HOUR);
          await watch.untilWakes(1);
        } finally {
          await watch.stop();
        }
      });

      it("does not wake for appends to another log", async () => {
        const { log, watchersSettled } = await chunkStore(fresh);
        const watch = startWatch(log, key("bg"));
        try {
          await eventually(() => watchersSettled?.() ?? true);
          await log.appendChunks(key("bg-other"), [chunk(1)], Date.now() + HOUR);
          // (sequence 7: MongoDB holds one log per snapshot ID, so the s1 log's sequence 1 must stay free)
          await log.appendChunks(key("bg", "s2"), [chunk(7)], Date.now() + HOUR);
          // Bounded negative check (see QUIET_MS): the other logs' appends reach no wake-up.
          await sleep(QUIET_MS);
          expect(watch.wakes).toBe(0);
          await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
          await watch.untilWakes(1);
        } finally {
          await watch.stop();
        }
      });

      it("ends when its signal aborts and releases its resources", async () => {
        const { log, openResources } = await chunkStore(fresh);
        const controller = new AbortController();
        let ended = false;
        const done = (async () => {
          for await (const _wake of log.watchChunks(key("bg"), controller.signal)) void _wake;
          ended = true;
        })();
        await eventually(() => openResources() > 0);
        controller.abort();
        await done;
        expect(ended).toBe(true);
        await eventually(() => openResources() === 0);
      });

      it("ends at once and holds nothing when its signal is already aborted", async () => {
        const { log, openResources } = await chunkStore(fresh);
        const controller = new AbortController();
        controller.abort();
        const wakes: unknown[] = [];
        for await (const wake of log.watchChunks(key("bg"), controller.signal)) wakes.push(wake);
        expect(wakes).toEqual([]);
        expect(openResources()).toBe(0);
      });

      it("ends when the store closes", async () => {
        const { log } = await chunkStore(fresh);
        const watch = startWatch(log, key("bg"));
        await log.close?.();
        await watch.ended;
      });
    });

    describe("arguments", () => {
      it("rejects an append whose sequences are not integers >= 1 or not consecutive, storing nothing", async () => {
        const { log } = await chunkStore(fresh);
        const bad: StoredChunk[][] = [
          [chunk(0)],
          [chunk(-1)],
          [chunk(1.5)],
          [{ ...chunk(1), sequence: Number.NaN }],
          [{ ...chunk(1), sequence: "1" as unknown as number }],
          [chunk(1), chunk(3)],
          [chunk(2), chunk(1)],
          [chunk(1), chunk(1)],
        ];
        for (const batch of bad) {
          await expectAgentError(
            log.appendChunks(key("bg"), batch, Date.now() + HOUR),
            "INVALID_ARGUMENT",
            /appendChunks: .*sequence/,
          );
        }
        expect(await log.hasChunks(key("bg"))).toBe(false);
      });

      it("rejects an empty append, a chunk that is not JSON and a bad keep-until time, storing nothing", async () => {
        const { log } = await chunkStore(fresh);
        await expectAgentError(log.appendChunks(key("bg"), [], Date.now() + HOUR), "INVALID_ARGUMENT", /non-empty/);
        const notJson = { sequence: 1, chunk: { n: 1n } as unknown as AgentStreamChunk };
        await expectAgentError(log.appendChunks(key("bg"), [notJson], Date.now() + HOUR), "INVALID_ARGUMENT", /JSON/);
        for (const keepUntil of [Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY, 9e15, "1" as unknown as number]) {
          await expectAgentError(
            log.appendChunks(key("bg"), [chunk(1)], keepUntil),
            "INVALID_ARGUMENT",
            /keepUntil must be an integer epoch-millisecond time/,
          );
        }
        expect(await log.hasChunks(key("bg"))).toBe(false);
      });

      it("rejects a read whose afterSequence or limit is negative or not an integer", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
        for (const [after, limit] of [
          [-1, 10],
          [0.5, 10],
          [0, -1],
          [0, 2.5],
          [Number.NaN, 10],
          [0, Number.POSITIVE_INFINITY],
        ] as const) {
          await expectAgentError(log.readChunks(key("bg"), after, limit), "INVALID_ARGUMENT", /readChunks: /);
        }
      });

      it("rejects a key without a session ID or with an invalid snapshot ID in every method", async () => {
        const { log, openResources } = await chunkStore(fresh);
        for (const bad of [key("../escape"), key(""), key(".hidden"), key("bg", "")]) {
          const what = JSON.stringify(bad);
          await expectAgentError(log.appendChunks(bad, [chunk(1)], Date.now() + HOUR), "INVALID_ARGUMENT", /key/);
          await expectAgentError(log.readChunks(bad, 0, 10), "INVALID_ARGUMENT", /key/);
          await expectAgentError(log.hasChunks(bad), "INVALID_ARGUMENT", /key/);
          await expectAgentError(log.keepChunks(bad, Date.now() + HOUR), "INVALID_ARGUMENT", /key/);
          expectThrowsAgentError(() => log.watchChunks(bad, new AbortController().signal), "INVALID_ARGUMENT", /key/);
          expect(openResources(), what).toBe(0);
        }
      });

      it("rejects keepChunks and sweepChunks with a time that is not a number", async () => {
        const { log } = await chunkStore(fresh);
        await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
        await expectAgentError(log.keepChunks(key("bg"), Number.NaN), "INVALID_ARGUMENT", /keepChunks: keepUntil/);
        await expectAgentError(log.sweepChunks(Number.NaN), "INVALID_ARGUMENT", /sweepChunks: now must be/);
        await expectAgentError(log.sweepChunks("1" as unknown as number), "INVALID_ARGUMENT", /sweepChunks/);
        expect(await log.hasChunks(key("bg"))).toBe(true);
      });
    });

    // Registered only for stores with a namespace per tenant (the others keep one; the runtime checks owners).
    if (options.separatesTenants)
      describe("tenants", () => {
        it("does not find a log written under one tenant under another", async () => {
          const { log } = await chunkStore(fresh);
          const acme = { tenant: "acme" };
          const globex = { tenant: "globex" };
          await log.appendChunks(key("bg"), chunks(1, 2), Date.now() + HOUR, acme);
          expect(await log.readChunks(key("bg"), 0, 10, globex)).toEqual([]);
          expect(await log.hasChunks(key("bg"), globex)).toBe(false);
          expect(await log.hasChunks(key("bg"))).toBe(false);
          expect(await log.readChunks(key("bg"), 0, 10, acme)).toEqual(chunks(1, 2));
        });

        it("sweeps only the caller's tenant when given a context", async () => {
          const { log } = await chunkStore(fresh);
          const K = Date.now() + HOUR;
          await log.appendChunks(key("bg"), [chunk(1)], K, { tenant: "acme" });
          await log.appendChunks(key("bg"), [chunk(1)], K, { tenant: "globex" });
          expect(await log.sweepChunks(K, { tenant: "globex" })).toBe(1);
          expect(await log.hasChunks(key("bg"), { tenant: "acme" })).toBe(true);
          expect(await log.hasChunks(key("bg"), { tenant: "globex" })).toBe(false);
        });
      });

    // Registered only for stores shared across processes.
    if (!options.sharedAcrossProcesses) return;

    describe("across processes", () => {
      it(
        "wakes a watcher for an append another process makes, and reads what it appended",
        { timeout: 60_000 },
        async () => {
          const { log, crossProcess, watchersSettled } = await chunkStore(fresh);
          const descriptor = crossProcessOf(name, crossProcess);
          await log.appendChunks(key("bg"), [chunk(1)], Date.now() + HOUR);
          const watch = startWatch(log, key("bg"));
          try {
            await eventually(() => watchersSettled?.() ?? true);
            const appended = await runChildWriter<number>(descriptor, {
              cmd: "chunks",
              sessionId: "s1",
              snapshotId: "bg",
              from: 2,
              to: 3,
              keepUntil: Date.now() + HOUR,
            });
            expect(appended).toBe(2);
            await watch.untilWakes(1);
            expect(await log.readChunks(key("bg"), 1, 10)).toEqual(chunks(2, 3));
          } finally {
            await watch.stop();
          }
        },
      );
    });
  });
}

export { startWatch, HOUR, QUIET_MS, type Watch };
