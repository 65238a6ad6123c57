/**
 * `npx tsx bench/fdatasync.bench.ts [dir]`: what one durable commit's sync
 * costs on this disk — the floor under a sequential turn on a store that
 * fsyncs each commit (SQLite with synchronous=FULL, the file store). Writes
 * 4 KiB at the end of a file in `dir` (default: the OS temp directory, where
 * bench:wire keeps its stores) and times `fs.fdatasyncSync` after each write,
 * 2,000 times after 100 uncounted ones; prints p50/p90/p99 in ms. ITERATIONS
 * sets the count. Not a test: nothing is asserted.
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const ITERATIONS = Number(process.env.ITERATIONS ?? 2000);
const WARMUP = 100;
const dir = mkdtempSync(join(process.argv[2] ?? tmpdir(), "agentd-fdatasync-"));
const block = Buffer.alloc(4096, 0x61);
const fd = openSync(join(dir, "log"), "w");
const times: number[] = [];
try {
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    writeSync(fd, block);
    const t0 = performance.now();
    fdatasyncSync(fd);
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
} finally {
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
}
times.sort((a, b) => a - b);
const at = (p: number): string => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(3);
console.log(
  `fdatasync after a 4 KiB append, ${ITERATIONS} times in ${dir}: p50 ${at(50)} ms, p90 ${at(90)} ms, p99 ${at(99)} ms`,
);
