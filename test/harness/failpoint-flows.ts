import { afterAll, beforeAll, expect, it } from "vitest";
import { MongoSessionStore } from "../../stores/mongodb/mongo-store.js";
import type { CounterState } from "../stores/snapshot-factory.js";
import { freshPrefix } from "../stores/mongodb-fixtures.js";
import { isFlowCommand, occurrenceAt } from "./mongo-crash-points.js";
import { MongoJavaServer } from "./mongo-java-server.js";
import { MongoWireTap, type FailAction, type TappedCommand } from "./mongo-wire-tap.js";

/** One flow of a failpoint suite: its setup (no failpoint), the step under test, and what must hold after it. */
export interface FailpointFlow<S> {
  name: string;
  setup: (store: S) => Promise<void>;
  /** `repeat`: the restarted process repeating the step after a failure. */
  step: (store: S, repeat: boolean) => Promise<unknown>;
  check: (store: S) => Promise<void>;
}

/** What a failpoint suite runs its flows on. */
export interface FailpointRig<S extends { close(): Promise<void> }> {
  /** The wire tap between the stores and the server (read once the suite's `beforeAll` started it). */
  tap: () => MongoWireTap;
  /** A ready store on the collections named by `prefix`, through the tap or straight to the server. */
  open: (prefix: string, viaTap: boolean) => Promise<S>;
  /** A command's key (`<command> <collection>` without the case's prefix); keys ending " settle" belong to no step. */
  keyOf: (command: TappedCommand) => string;
}

/** Every way a failpoint fails one command: cut before it is sent, cut after it applied (reply lost), refused transiently. */
export const FAIL_ACTIONS: readonly FailAction[] = ["cut-before", "cut-after", "fail-transient"];

/**
 * Declares one test per flow: the step's commands are recorded on a run without failures, then for
 * every command and every {@link FAIL_ACTIONS} action a fresh case fails that command once, abandons
 * the store, lets a re-opened store repeat the step (when it failed) and checks the flow's
 * invariants. The test fails with every case whose invariants broke, and when a failpoint never fired.
 */
export function failpointCases<S extends { close(): Promise<void> }>(
  flows: readonly FailpointFlow<S>[],
  rig: FailpointRig<S>,
): void {
  /**
   * A store through the tap on collections where `flow`'s setup ran on a store since closed (its
   * commits' settlement flushed by close: no background write or read-settle of the setup lands
   * within the step, so every run of the step sends the same commands).
   */
  const prepared = async (flow: FailpointFlow<S>, prefix: string): Promise<S> => {
    const setup = await rig.open(prefix, false);
    await flow.setup(setup);
    await setup.close();
    return rig.open(prefix, true);
  };

  /** The flow's step commands (settlement flushes left out: a timer sends them, they belong to no step). */
  const stepCommands = async (flow: FailpointFlow<S>): Promise<string[]> => {
    const store = await prepared(flow, freshPrefix());
    const seen: string[] = [];
    rig.tap().failpoint = (command) => {
      const key = rig.keyOf(command);
      if (isFlowCommand(command) && !key.endsWith(" settle")) seen.push(key);
      return "pass";
    };
    try {
      await flow.step(store, false);
    } finally {
      rig.tap().failpoint = undefined;
    }
    await flow.check(store);
    return seen;
  };

  for (const flow of flows) {
    it(`${flow.name}: every command cut before or after it applied or failed transiently, then repeated by a re-opened store`, async () => {
      const keys = await stepCommands(flow);
      expect(keys.length).toBeGreaterThan(0);
      const failed: string[] = [];
      for (let index = 0; index < keys.length; index++) {
        const { key, occurrence } = occurrenceAt(keys, index);
        for (const action of FAIL_ACTIONS) {
          const prefix = freshPrefix();
          const crashed = await prepared(flow, prefix);
          let seen = 0;
          let fired = false;
          rig.tap().failpoint = (command) => {
            if (fired || !isFlowCommand(command) || rig.keyOf(command) !== key) return "pass";
            if (seen++ !== occurrence) return "pass";
            fired = true;
            return action;
          };
          const outcome = await flow.step(crashed, false).then(
            () => "ok",
            (err: unknown) => String((err as { status?: string }).status ?? err),
          );
          rig.tap().failpoint = undefined;
          await crashed.close().catch(() => undefined);
          // The restarted process: a new store repeats the step until it answers, then the invariants.
          const restarted = await rig.open(prefix, false);
          if (outcome !== "ok") await flow.step(restarted, true);
          try {
            await flow.check(restarted);
          } catch (err) {
            failed.push(`${key}#${occurrence} ${action} (${outcome}): ${(err as Error).message.split("\n")[0]}`);
          }
          expect(fired, `${key}#${occurrence} ${action} never fired`).toBe(true);
        }
      }
      expect(failed).toEqual([]);
    }, 300_000);
  }
}

/**
 * Starts a mongo-java-server and a wire tap before the suite (stopped after it, with every store
 * opened) and returns how a suite's flows reach them: stores on `database` that fail nothing
 * themselves (a failover window of 0: no retry; an orphan grace of 0), through the tap or not.
 */
export function failpointStores(database: string): Omit<FailpointRig<MongoSessionStore<CounterState>>, "keyOf"> {
  let server: MongoJavaServer;
  let tap: MongoWireTap;
  const opened: MongoSessionStore<CounterState>[] = [];
  beforeAll(async () => {
    server = await MongoJavaServer.start();
    tap = await MongoWireTap.start(server.port);
  }, 300_000);
  afterAll(async () => {
    for (const store of opened) await store.close().catch(() => undefined);
    await tap?.close();
    await server?.stop();
  });
  const open = async (prefix: string, viaTap: boolean): Promise<MongoSessionStore<CounterState>> => {
    const uri = viaTap
      ? `mongodb://127.0.0.1:${tap.port}/?directConnection=true&serverSelectionTimeoutMS=2000&retryWrites=false`
      : server.uri;
    const store = new MongoSessionStore<CounterState>({
      uri,
      database,
      collectionPrefix: prefix,
      failoverWindowMs: 0,
      orphanGraceMs: 0,
    });
    opened.push(store);
    await store.ready();
    return store;
  };
  return { tap: () => tap, open };
}
