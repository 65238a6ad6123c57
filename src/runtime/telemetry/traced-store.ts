import { SpanKind } from "@opentelemetry/api";
import type { SessionStore } from "../../../stores/snapshot-store.js";
import { REQUIRED_STORE_METHODS } from "../../../stores/session-store-check.js";
import { agentdInstruments, inSpan } from "./telemetry.js";
import * as names from "./telemetry-names.js";

/** The store operations that get a span and a duration (long-lived subscriptions and lifecycle calls do not). */
const TRACED_OPERATIONS: ReadonlySet<string> = new Set([
  ...REQUIRED_STORE_METHODS,
  "listHeads",
  "deleteSession",
  "sweepExpired",
  "appendChunks",
  "readChunks",
  "hasChunks",
  "keepChunks",
  "sweepChunks",
  "recordToolCall",
  "journaledToolCalls",
  "dropToolCalls",
]);

/**
 * `store` with each operation in an internal span `agentd.store <operation>`
 * (attributes `agentd.store` = `storeName`, `agentd.store.operation`; a
 * failure fails the span) and its duration in
 * `agentd.store.operation.duration`. Everything else about the store is kept:
 * the optional methods it has and lacks (`subscribeStatus`, `listHeads`, …,
 * so capability checks read the same), its other properties, and `this` of
 * every call. Record contents and IDs are not recorded. `agentd serve` wraps
 * its `--store` with it when telemetry is on.
 */
export function traceSessionStore<S, T extends SessionStore<S>>(store: T, storeName: string): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      let method = wrapped.get(property);
      if (!method) {
        const fn = value as (...args: unknown[]) => Promise<unknown>;
        // Every method runs on the store itself (`this` is never the proxy).
        method =
          typeof property === "string" && TRACED_OPERATIONS.has(property)
            ? tracedOperation(target, fn, storeName, property)
            : fn.bind(target);
        wrapped.set(property, method);
      }
      return method;
    },
  });
}

function tracedOperation(
  target: object,
  operation: (...args: unknown[]) => Promise<unknown>,
  storeName: string,
  name: string,
): (...args: unknown[]) => Promise<unknown> {
  const attributes = { [names.ATTR_STORE]: storeName, [names.ATTR_STORE_OPERATION]: name };
  return (...args) => {
    const started = performance.now();
    return inSpan(`agentd.store ${name}`, { kind: SpanKind.INTERNAL, attributes }, () =>
      operation.apply(target, args),
    ).finally(() =>
      agentdInstruments().storeOperationDuration.record((performance.now() - started) / 1000, attributes),
    );
  };
}
