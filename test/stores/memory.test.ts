import { InMemorySessionStore } from "../../stores/memory-store.js";
import { runStoreConformance } from "./conformance.js";
import type { CounterState } from "./snapshot-factory.js";

// In-process only: the memory store cannot be shared, so the cross-process cases are skipped.
runStoreConformance(
  "memory",
  async () => {
    const store = new InMemorySessionStore<CounterState>();
    return {
      store,
      openResources: () => store.subscriberCount + store.chunkWatcherCount,
      footprint: async () => store.sizes(),
    };
  },
  { keepsToolJournal: true },
);
