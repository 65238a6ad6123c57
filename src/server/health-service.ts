import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  Health,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
} from "../../gen/ts/grpc/health/v1/health_pb.js";

/**
 * Serving status of every health-checked service, behind `grpc.health.v1.Health`.
 * "" is the whole server. Status changes are pushed to every `Watch` stream;
 * {@link HealthStatus.endWatches} completes those streams (used at shutdown
 * so long-lived watchers do not hold the drain open).
 */
export class HealthStatus {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly listeners = new Set<() => void>();
  private ended = false;
  private draining = false;

  /** Marks `services` (and "") as SERVING. */
  constructor(services: readonly string[]) {
    this.statuses.set("", ServingStatus.SERVING);
    for (const name of services) this.statuses.set(name, ServingStatus.SERVING);
  }

  /** Sets one service's status and notifies watchers. */
  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    this.notify();
  }

  /** Sets every known service (and "") to NOT_SERVING; used when draining (final: dependency checks no longer change it). */
  setAllNotServing(): void {
    this.draining = true;
    for (const name of this.statuses.keys()) this.statuses.set(name, ServingStatus.NOT_SERVING);
    this.notify();
  }

  /**
   * A dependency every service needs (the session store) became available or
   * unavailable: every known service (and "") turns SERVING or NOT_SERVING.
   * Ignored once draining. Watchers hear only actual changes.
   */
  setDependencyAvailable(available: boolean): void {
    if (this.draining) return;
    const status = available ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    let changed = false;
    for (const [name, current] of this.statuses) {
      if (current !== status) {
        this.statuses.set(name, status);
        changed = true;
      }
    }
    if (changed) this.notify();
  }

  /** The status of `service`, or undefined when it is not health-checked. */
  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  /** A copy of every status. */
  all(): Map<string, ServingStatus> {
    return new Map(this.statuses);
  }

  /** Completes every open Watch stream after it has sent the current status. */
  endWatches(): void {
    this.ended = true;
    this.notify();
  }

  /** True after {@link endWatches}. */
  get watchesEnded(): boolean {
    return this.ended;
  }

  /** Registers a change listener; returns its removal function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

/** Options of {@link watchDependencyHealth}. */
export interface DependencyHealthOptions {
  /** Resolves when the dependency is usable, rejects when not (e.g. `SessionStore.ping`). */
  ping: () => Promise<void>;
  /** Time between probes; default 2 s. */
  intervalMs?: number;
  /** A probe still unanswered after this long counts as failed; default the interval. */
  timeoutMs?: number;
  /** Told of every availability change (e.g. to log it). */
  onChange?: (available: boolean, err?: unknown) => void;
}

/** Default interval of the store health probe. */
export const DEFAULT_DEPENDENCY_HEALTH_INTERVAL_MS = 2_000;

/**
 * Probes a dependency every `intervalMs` (one probe at a time, on unref'd
 * timers) and turns the whole server NOT_SERVING while the probe fails or
 * times out, SERVING again once it succeeds. Returns the stop function.
 */
export function watchDependencyHealth(health: HealthStatus, options: DependencyHealthOptions): () => void {
  const intervalMs = options.intervalMs ?? DEFAULT_DEPENDENCY_HEALTH_INTERVAL_MS;
  const timeoutMs = options.timeoutMs ?? intervalMs;
  let stopped = false;
  let available = true;
  let timer: NodeJS.Timeout | undefined;
  const probe = async (): Promise<void> => {
    let ok = true;
    let failure: unknown;
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        options.ping(),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(() => reject(new Error(`health probe timed out after ${timeoutMs} ms`)), timeoutMs);
          timeout.unref();
        }),
      ]);
    } catch (err) {
      ok = false;
      failure = err;
    } finally {
      clearTimeout(timeout);
    }
    if (stopped) return;
    if (ok !== available) {
      available = ok;
      health.setDependencyAvailable(ok);
      options.onChange?.(ok, failure);
    }
    schedule();
  };
  const schedule = (): void => {
    timer = setTimeout(() => void probe(), intervalMs);
    timer.unref();
  };
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

function response(status: ServingStatus): HealthCheckResponse {
  return create(HealthCheckResponseSchema, { status });
}

/**
 * Registers `grpc.health.v1.Health`: Check (NOT_FOUND for unknown services),
 * List, and Watch (current status at once, then every change; SERVICE_UNKNOWN
 * for unknown services, as the health protocol specifies).
 */
export function registerHealthService(router: ConnectRouter, health: HealthStatus): void {
  router.service(Health, {
    check(req) {
      const status = health.get(req.service);
      if (status === undefined) {
        throw new ConnectError(`service "${req.service}" is not health-checked by this server`, Code.NotFound);
      }
      return response(status);
    },
    list() {
      const statuses: Record<string, HealthCheckResponse> = {};
      for (const [name, status] of health.all()) statuses[name] = response(status);
      return create(HealthListResponseSchema, { statuses });
    },
    watch(req, ctx) {
      return watchStatus(health, req.service, ctx);
    },
  });
}

async function* watchStatus(
  health: HealthStatus,
  service: string,
  ctx: HandlerContext,
): AsyncGenerator<HealthCheckResponse> {
  let wake: (() => void) | undefined;
  let changed = true;
  const off = health.onChange(() => {
    changed = true;
    wake?.();
  });
  const onAbort = (): void => wake?.();
  ctx.signal.addEventListener("abort", onAbort);
  try {
    let last: ServingStatus | undefined;
    while (!ctx.signal.aborted) {
      if (changed) {
        changed = false;
        const status = health.get(service) ?? ServingStatus.SERVICE_UNKNOWN;
        if (status !== last) {
          last = status;
          yield response(status);
        }
        if (health.watchesEnded) return;
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  } finally {
    off();
    ctx.signal.removeEventListener("abort", onAbort);
  }
}
