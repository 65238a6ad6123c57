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

  /** Sets every known service (and "") to NOT_SERVING; used when draining. */
  setAllNotServing(): void {
    for (const name of this.statuses.keys()) this.statuses.set(name, ServingStatus.NOT_SERVING);
    this.notify();
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

async function* watchStatus(health: HealthStatus, service: string, ctx: HandlerContext): AsyncGenerator<HealthCheckResponse> {
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
