import type {
  ConnectionCheckOutFailedEvent,
  ConnectionClosedEvent,
  ConnectionPoolClearedEvent,
  ConnectionReadyEvent,
  MongoClient,
  TopologyDescriptionChangedEvent,
} from "mongodb";

/** Server types that take writes (and so serve the store's primary reads and its change stream). */
const WRITABLE_TYPES: ReadonlySet<string> = new Set(["RSPrimary", "Standalone", "Mongos", "LoadBalancer"]);
/** Server types known not to be writable: a server that becomes one no longer counts. (Unknown keeps its standing.) */
const READ_ONLY_TYPES: ReadonlySet<string> = new Set(["RSSecondary", "RSArbiter", "RSOther", "RSGhost"]);

/**
 * Calls `onReconnect(lostAt)` once each time the connection to a writable
 * server (the primary, a standalone server, a mongos) is lost and a
 * connection is established again, `lostAt` being when the loss was first
 * seen. Many pool events of one outage (every pooled connection failing, the
 * pool cleared, checkouts failing) make one call; pool events of secondaries
 * (a flapping secondary) make none. While no topology event has been seen
 * (a client connected before the store subscribed), every server counts.
 * Returns a function that unsubscribes.
 */
export function watchReconnects(client: MongoClient, onReconnect: (lostAt: number) => void): () => void {
  const writable = new Set<string>();
  let lostAt: number | undefined;
  const counts = (address: string): boolean => writable.size === 0 || writable.has(address);
  const lose = (address: string): void => {
    if (counts(address)) lostAt ??= Date.now();
  };
  const listeners = {
    topologyDescriptionChanged: (event: TopologyDescriptionChangedEvent): void => {
      for (const [address, server] of event.newDescription.servers) {
        if (WRITABLE_TYPES.has(server.type)) writable.add(address);
        else if (READ_ONLY_TYPES.has(server.type)) writable.delete(address);
      }
    },
    connectionPoolCleared: (event: ConnectionPoolClearedEvent): void => lose(event.address),
    connectionCheckOutFailed: (event: ConnectionCheckOutFailedEvent): void => {
      if (event.reason === "connectionError") lose(event.address);
    },
    connectionClosed: (event: ConnectionClosedEvent): void => {
      if (event.reason === "error") lose(event.address);
    },
    connectionReady: (event: ConnectionReadyEvent): void => {
      if (lostAt === undefined || !counts(event.address)) return;
      const since = lostAt;
      lostAt = undefined;
      onReconnect(since);
    },
  };
  for (const [name, listener] of Object.entries(listeners)) client.on(name as never, listener as never);
  return () => {
    for (const [name, listener] of Object.entries(listeners)) client.off(name as never, listener as never);
  };
}
