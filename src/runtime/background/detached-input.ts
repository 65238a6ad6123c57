import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, InputAck } from "../../types/agent-io.js";
import type { StoreCallContext, SessionStore } from "../../../stores/snapshot-store.js";
import { ownedRecord } from "../sessions/session-lookup.js";
import { backgroundStoreOf } from "./background-store.js";
import type { BackgroundWork } from "./background-work.js";

/** What sending a control input to detached work needs from the agent. */
export interface DetachedInputTarget<S> {
  name: string;
  store?: SessionStore<S>;
  background: BackgroundWork;
}

/**
 * Sends a control input (cancel, or steer with a message) to the detached
 * work of `snapshotId` (its pending snapshot) running in this process; the
 * ack says what became of it (a steer kept for the running turn reads
 * `steered`; the work's stream records its final ack). Throws AgentError:
 * INVALID_ARGUMENT (no snapshot ID, not a control input), NOT_FOUND (unknown
 * or foreign snapshot), FAILED_PRECONDITION (the work has ended, or it runs
 * on another instance: this one cannot reach it; AbortInvocation stops it
 * from anywhere).
 */
export async function sendDetachedInput<S>(
  target: DetachedInputTarget<S>,
  snapshotId: string,
  input: AgentInput,
  storeContext?: StoreCallContext,
): Promise<InputAck> {
  if (!input.cancel && !input.steer)
    throw new AgentError("INVALID_ARGUMENT", "input must be a control input: set cancel, or steer with a message");
  const store = backgroundStoreOf(target.name, target.store, "attach");
  if (!snapshotId) throw new AgentError("INVALID_ARGUMENT", "snapshot_id is required");
  const { record } = await ownedRecord(store, target.name, snapshotId, storeContext);
  const control = target.background.controls.get(snapshotId);
  if (control) return control(input);
  if (record.status !== "pending")
    throw new AgentError(
      "FAILED_PRECONDITION",
      `the detached work of snapshot "${snapshotId}" has ended (status ${record.status}); nothing to cancel or steer`,
    );
  const instance = record.work?.runs.at(-1)?.instance;
  throw new AgentError(
    "FAILED_PRECONDITION",
    `the detached work of snapshot "${snapshotId}" runs on another instance${instance ? ` ("${instance}")` : ""}: send the input to that instance, or stop the whole work with AbortInvocation from any instance`,
    { details: { snapshotId, ...(instance ? { instance } : {}) } },
  );
}
