// Preloaded into the agentd process of `npm run bench:chunks` (node --import):
// measures how long the server's event loop is held at once, in main-thread
// CPU time, which other processes on a loaded machine do not inflate (a
// wall-clock stall includes the time the thread waited for a core). While
// measuring, a setImmediate ring notes the CPU time between its callbacks:
// one event-loop iteration, i.e. the longest synchronous stretch (GC on the
// main thread included) that kept I/O such as a health check waiting. The
// first SIGUSR2 starts a measurement; the next appends its figures to
// $AGENTD_LOOP_STEPS_FILE as one JSON line and stops (the ring keeps the loop
// polling, so it only runs while measured).
import { appendFileSync } from "node:fs";

const file = process.env.AGENTD_LOOP_STEPS_FILE;
const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};
let measuring = false;
let longest = 0;
let over20 = 0;
let last = 0;
const tick = () => {
  if (!measuring) return;
  const now = threadCpuMs();
  const step = now - last;
  if (step > longest) longest = step;
  if (step > 20) over20++;
  last = now;
  setImmediate(tick).unref();
};
if (file) {
  process.on("SIGUSR2", () => {
    if (measuring) {
      measuring = false;
      appendFileSync(file, `${JSON.stringify({ longestStepCpuMs: longest, stepsOver20CpuMs: over20 })}\n`);
      return;
    }
    measuring = true;
    longest = 0;
    over20 = 0;
    last = threadCpuMs();
    setImmediate(tick).unref();
  });
}
