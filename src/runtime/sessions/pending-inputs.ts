import type { DetachedWork } from "../../types/detached-work.js";
import type { PendingInput } from "../../types/snapshot.js";

/**
 * The inputs a pending row's detached work runs, as a reader sees them
 * (`SessionSnapshot.pendingInputs`): each one's message or tool resume and
 * request ID, copied, in order, marked `completed` for the first
 * `work.completed`. Undefined without work (a committed row, or a pending row
 * not written by detach) or when it holds no input.
 */
export function pendingInputsOf(work: DetachedWork | undefined): PendingInput[] | undefined {
  if (!work || work.inputs.length === 0) return undefined;
  return work.inputs.map((input, index) => ({
    ...(input.message ? { message: structuredClone(input.message) } : {}),
    ...(input.resume ? { resume: structuredClone(input.resume) } : {}),
    ...(input.requestId ? { requestId: input.requestId } : {}),
    completed: index < work.completed,
  }));
}
