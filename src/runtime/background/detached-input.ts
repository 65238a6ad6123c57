import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, InputAck } from "../../types/agent-io.js";
import type { StoreCallContext, SessionStore } from "../../../stores/snapshot-store.js";
import { ownedRecord } from "../sessions/session-lookup.js";
import { backgroundStoreOf } from "./background-store.js";
import type { BackgroundWork } from "./background-work.js";
import type { LivenessSettings } from "../sessions/snapshot-liveness.js";
import { postControl } from "./control-inbox.js";
import type { InputLimits } from "../sessions/input-limits.js";
import { admitInput } from "../invocations/input-admission.js";

/** What sending a control input to detached work needs from the agent. */
export interface DetachedInputTarget<S> {
  name: string;
  store?: SessionStore<S>;
  background: BackgroundWork;
  liveness: LivenessSettings;
  /** Bounds on posted steers (`maxPostedControlBytes`; default `DEFAULT_INPUT_LIMITS`). */
  inputs?: InputLimits;
}

/**
 * Sends a control input (cancel, or steer with a message) to the detached
 * work of `snapshotId` (its pending snapshot): directly when it runs in this
 * process, else posted on its row for the instance running it
 * ({@link postControl}: answered within about a heartbeat interval). The
 * ack says what became of it (a steer kept for the running turn reads
 * `steered`; the work's stream records its final ack). Throws AgentError:
 * INVALID_ARGUMENT (no snapshot ID, not a control input), NOT_FOUND (unknown
 * or foreign snapshot), RESOURCE_EXHAUSTED (a bound on steers: see
 * `TurnControl` and `postControl`), FAILED_PRECONDITION (the work has ended),
 * DEADLINE_EXCEEDED (the other instance did not answer in time).
 */
export async function sendDetachedInput<S>(
  target: DetachedInputTarget<S>,
  snapshotId: string,
  input: AgentInput,
  storeContext?: StoreCallContext,
): Promise<InputAck> {
  if (!input.cancel && !input.steer)
    throw new AgentError("INVALID_ARGUMENT", "input must be a control input: set cancel, or steer with a message");
  admitInput(input, { queued: 0, maxQueued: Number.POSITIVE_INFINITY }); // INVALID_ARGUMENT for a malformed one
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
  return postControl(store, snapshotId, input, target.liveness, storeContext, target.inputs?.maxPostedControlBytes);
}
