import { Code, type ConnectError } from "@connectrpc/connect";
import type { AgentInput as WireAgentInput } from "../../gen/ts/agentd/v1/agent_pb.js";
import type { InputAck } from "../types/agent-io.js";
import { clientError } from "./client-errors.js";
import { ControlAcks } from "./control-acks.js";
import type { Turn } from "./turn.js";

/** An input sent whose TurnEnd (or, for a detach input, the output) has not arrived yet. */
export interface Outstanding {
  /** The encoded input, with its request ID: re-sent as is after a reconnect. */
  wire: WireAgentInput;
  /** Its turn; none for a detach input. */
  turn: Turn | undefined;
  /** Sent as a steer and not yet answered: its turn exists only if the server queues it. */
  steer?: boolean;
}

/**
 * A Chat's inputs still in flight, oldest first: the turn inputs whose
 * TurnEnd has not arrived (re-sent in order after a reconnect) and the
 * control inputs (cancel, steer) waiting for their InputAck (never re-sent).
 */
export class OutstandingInputs {
  private readonly entries: Outstanding[] = [];
  /** Cancel and steer inputs waiting for their InputAck. */
  private readonly acks = new ControlAcks();

  /** Adds an input sent (after every earlier one). */
  add(entry: Outstanding): void {
    this.entries.push(entry);
  }

  /** Resolves with the InputAck of the control input `requestId`; rejects when it is dropped or the call ends. */
  expectAck(requestId: string): Promise<InputAck> {
    return this.acks.expect(requestId);
  }

  /** The oldest input whose TurnEnd has not arrived (the running turn's), or undefined. */
  get running(): Outstanding | undefined {
    return this.entries[0];
  }

  /** The running turn ended: its input is no longer outstanding. */
  turnEnded(): void {
    this.entries.shift();
  }

  /** The encoded inputs to re-send on a new call, in order. */
  wires(): WireAgentInput[] {
    return this.entries.map((o) => o.wire);
  }

  /** An InputAck: a steer's fate settles its entry (dropped when a turn took it), then its caller's promise. */
  onAck(ack: InputAck): void {
    const index = this.entries.findIndex((o) => o.steer && o.wire.requestId === ack.requestId);
    if (index >= 0) {
      if (ack.result === "queued") this.entries[index]!.steer = false;
      else this.entries.splice(index, 1);
    }
    this.acks.settle(ack);
  }

  /** Before a reconnect: unanswered control inputs are not re-sent; their callers learn it (UNAVAILABLE). */
  dropUnansweredControls(): void {
    const gone = clientError(
      Code.Unavailable,
      "the connection broke before the server answered this control input; it may or may not have taken effect (it is not re-sent)",
    );
    for (let i = this.entries.length - 1; i >= 0; i--) if (this.entries[i]!.steer) this.entries.splice(i, 1);
    this.acks.failAll(gone);
  }

  /** The call ended: every turn that had not ended and every control input waiting for its ack rejects with `err`. */
  failAll(err: ConnectError): void {
    for (const { turn } of this.entries.splice(0)) turn?.fail(err);
    this.acks.failAll(err);
  }
}
