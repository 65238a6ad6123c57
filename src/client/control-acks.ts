import type { ConnectError } from "@connectrpc/connect";
import type { InputAck } from "../types/agent-io.js";

/** A control input (cancel or steer) sent and not yet answered. */
interface PendingAck {
  resolve(ack: InputAck): void;
  reject(err: ConnectError): void;
}

/**
 * The control inputs of a conversation waiting for their InputAck, by
 * request ID. Control inputs are sent once and never re-sent after a
 * reconnect: the ones still waiting then fail (`failAll`).
 */
export class ControlAcks {
  private readonly pending = new Map<string, PendingAck>();

  /** Resolves with the ack of the control input `requestId` (or rejects when the call ends first). */
  expect(requestId: string): Promise<InputAck> {
    return new Promise<InputAck>((resolve, reject) => this.pending.set(requestId, { resolve, reject }));
  }

  /** Answers the waiting control input the ack names; false when none waits for it. */
  settle(ack: InputAck): boolean {
    const waiting = ack.requestId ? this.pending.get(ack.requestId) : undefined;
    if (!waiting) return false;
    this.pending.delete(ack.requestId!);
    waiting.resolve(ack);
    return true;
  }

  /** Whether the control input `requestId` still waits for its ack. */
  waiting(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  /** Fails every waiting control input with `err`. */
  failAll(err: ConnectError): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }
}
