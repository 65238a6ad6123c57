/**
 * Issue 47, crash side, per client language: agentd on an SQLite store is
 * SIGKILLed and restarted on the same port every 2–4 s while 4 conversations
 * of 6 turns each run through the TypeScript, Go and Python clients with their
 * default retry policies. No input of a successful turn may be lost and none
 * may be stored twice (request IDs make retries exactly-once); failed calls are
 * counted and printed. The full-size measurement is `npm run bench:restart`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { KillRestartLoop } from "../harness/kill-restart-loop.js";
import {
  checkStored,
  failureReasons,
  perKill,
  runDriver,
  type ClientLanguage,
  type DriverResult,
} from "../harness/restart-workload.js";

const WORKLOAD = { conversations: 4, turns: 6 };
/** Rounds of the workload at most, while waiting for a kill to land inside one. */
const MAX_ROUNDS = 5;

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

describe("SIGKILL + restart every 2–4 s under load (SQLite store, echo delay 100 ms)", () => {
  for (const language of ["ts", "go", "python"] as const satisfies readonly ClientLanguage[]) {
    it(`the ${language} client loses no input and stores none twice`, { timeout: 600_000 }, async () => {
      const dir = await mkdtemp(join(tmpdir(), "agentd-kill-restart-"));
      const loop = new KillRestartLoop({ args: ["--store", `sqlite:${dir}/agentd.db`, "--echo-delay-ms", "100"] });
      try {
        await loop.start();
        loop.run();
        // Rounds of the workload back to back until a kill has landed inside one (the first kill comes
        // 2–4 s after the loop starts; a fast client can finish a round before it): at most MAX_ROUNDS.
        const results: DriverResult[] = [];
        for (let round = 1; round <= MAX_ROUNDS; round++) {
          const started = Date.now();
          results.push(await runDriver(language, loop.url, { ...WORKLOAD, tag: `${language}-kill-r${round}` }));
          if (loop.kills.some((k) => k.at >= started)) break;
        }
        await loop.stop();
        const checks = await Promise.all(results.map((r) => checkStored(loop.url, r)));
        const check = {
          ok: sum(checks.map((c) => c.ok)),
          failed: sum(checks.map((c) => c.failed)),
          failedButStored: sum(checks.map((c) => c.failedButStored)),
          lost: checks.flatMap((c) => c.lost),
          duplicated: checks.flatMap((c) => c.duplicated),
        };
        const retries = sum(results.map((r) => r.retries));
        const rows = perKill(loop.kills, results);
        console.log(
          `kill-restart ${language}: ${results.length} rounds, ${loop.kills.length} kills, ${check.ok + check.failed} calls, ` +
            `${check.failed} failed (${check.failedButStored} of them stored: ran, answer lost), ${retries} retries; per kill: ` +
            rows.map((r) => `#${r.kill} down ${r.downMs} ms ${JSON.stringify(r.failed)}/${r.calls}`).join(", ") +
            `; failed by reason: ${JSON.stringify(Object.fromEntries(failureReasons(results)))}`,
        );
        expect(loop.kills.length).toBeGreaterThan(0);
        expect(retries).toBeGreaterThan(0);
        expect(check.ok + check.failed).toBe(results.length * WORKLOAD.conversations * WORKLOAD.turns);
        expect(check.lost).toEqual([]);
        expect(check.duplicated).toEqual([]);
      } finally {
        await loop.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
