import { InMemorySessionStore } from "../../stores/memory-store.js";
import { runStoreConformance } from "./conformance.js";
import type { CounterState } from "./snapshot-factory.js";

runStoreConformance("memory", async () => {
  const store = new InMemorySessionStore<CounterState>();
  return { store, openResources: () => store.subscriberCount };
});
