import type { AgentInput, InputAck } from "../../types/agent-io.js";

/** Sends a control input (cancel or steer) to detached work; returns its ack, throws AgentError when refused. */
export type DetachedControl = (input: AgentInput) => InputAck;

/**
 * The detached work of this process that control inputs can reach
 * (`SendInvocationInput`), by pending snapshot ID. Only this process's work:
 * work running on another instance is not here.
 */
export class DetachedControls {
  private readonly controls = new Map<string, DetachedControl>();

  /** Makes the work of `snapshotId` reachable until `done` settles. */
  register(snapshotId: string, control: DetachedControl, done: Promise<unknown>): void {
    this.controls.set(snapshotId, control);
    void done.finally(() => {
      if (this.controls.get(snapshotId) === control) this.controls.delete(snapshotId);
    });
  }

  /** The control of the work of `snapshotId` if it runs in this process. */
  get(snapshotId: string): DetachedControl | undefined {
    return this.controls.get(snapshotId);
  }
}
