import { AgentError } from "../../errors/agent-error.js";
import { isSnapshotSubscriber, type SessionStore, type SnapshotSubscriber } from "../../../stores/snapshot-store.js";

/** What needs background-work support from the store. */
export type BackgroundAction = "detach" | "watch" | "abort" | "attach";

/**
 * The one precondition of background work (detach, WatchSnapshot, Abort): the
 * agent keeps its sessions in a store, and that store pushes status changes (so
 * an abort reaches the work, in any process). Returns the store; throws
 * AgentError FAILED_PRECONDITION naming the agent and the fix otherwise.
 */
export function backgroundStoreOf<S>(
  agent: string,
  store: SessionStore<S> | undefined,
  action: BackgroundAction,
): SessionStore<S> & SnapshotSubscriber {
  if (!store) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `agent "${agent}" is client-managed: ${action} needs a server-side store`,
    );
  }
  if (!isSnapshotSubscriber(store)) {
    throw new AgentError(
      "FAILED_PRECONDITION",
      `the store of agent "${agent}" cannot push status changes, so background work could not be aborted: ` +
        `${action} needs a store with status subscription`,
    );
  }
  return store;
}
