/**
 * The health probe of `npm run bench:wire`: while a load runs, calls
 * `grpc.health.v1.Health/Check` on the server every {@link PROBE_INTERVAL_MS}
 * (after the previous answer; one call at a time) over its own HTTP/2
 * connection, as a load balancer's or Kubernetes' probe does, and records
 * each call's latency. It runs on a worker thread of the bench process
 * (bench/wire/health-probe-worker.mjs), so the load the main thread drives
 * does not delay it; what remains of the client side is the worker's own
 * scheduling on a busy machine.
 */
import { Worker } from "node:worker_threads";
import type { ServerProcess } from "./server-process.js";

/** Time between the answer to one Check and the start of the next. */
export const PROBE_INTERVAL_MS = 25;

/** What a probe saw. */
export interface HealthProbed {
  /** The latency (ms) of every Check made, in order. */
  latencies: number[];
  /** How many of them answered NOT_SERVING (or another status than SERVING). */
  notServing: number;
}

/** A running probe. */
export interface HealthProbe {
  /** Stops probing; resolves to what it saw. Rejects if a Check failed. */
  stop(): Promise<HealthProbed>;
}

/**
 * Starts probing `server`; resolves once the probe's connection is open (a
 * first, uncounted Check answered), so the load can start.
 */
export async function startHealthProbe(server: ServerProcess): Promise<HealthProbe> {
  const worker = new Worker(new URL("./health-probe-worker.mjs", import.meta.url), {
    workerData: { baseUrl: server.baseUrl, intervalMs: PROBE_INTERVAL_MS },
  });
  const latencies: number[] = [];
  let notServing = 0;
  let failure: string | undefined;
  let ready: () => void = () => {};
  const connected = new Promise<void>((resolve) => (ready = resolve));
  const done = new Promise<void>((resolve, reject) => {
    worker.on("message", (message: { ms: number; serving: boolean } | "ready" | "done" | { error: string }) => {
      if (message === "ready") ready();
      else if (message === "done") resolve();
      else if ("error" in message) failure = message.error;
      else {
        latencies.push(message.ms);
        if (!message.serving) notServing++;
      }
    });
    worker.on("error", reject);
    worker.on("exit", () => resolve());
  });
  done.catch(() => {}); // reported by stop()
  await Promise.race([connected, done]);
  if (failure) throw new Error(`${server.label}: ${failure}`);
  return {
    stop: async () => {
      worker.postMessage("stop");
      await done;
      await worker.terminate();
      if (failure) throw new Error(`${server.label}: ${failure}`);
      if (latencies.length === 0) throw new Error(`${server.label}: the health probe made no Check`);
      return { latencies, notServing };
    },
  };
}
