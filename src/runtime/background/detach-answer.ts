import { AgentError } from "../../errors/agent-error.js";
import type { AgentInput, AgentOutput, AgentStreamChunk } from "../../types/agent-io.js";
import { userText } from "../../types/content.js";
import type { SnapshotRecord } from "../../../stores/snapshot-store.js";
import type { AgentConnection } from "../agents/agent-connection.js";
import { inputFingerprint } from "../sessions/request-ledger.js";

/**
 * The connection of a retried detach: the session committed the detach
 * input's request ID on the pending row of its detached work, so the retry
 * answers what the first call answered — the pending snapshot's ID, finish
 * reason `detached` — without running anything (the work goes on, or has
 * finished, under that snapshot; attach to it for its chunks). Its input must
 * be the same as the first call's (else INVALID_ARGUMENT); it takes one.
 */
export class DetachAnswer<S> implements AgentConnection<S> {
  readonly sessionId: string;
  private sent = false;

  /** `edit`: the call's init patches, part of the input's fingerprint (see `inputFingerprint`). */
  constructor(
    private readonly row: SnapshotRecord<S>,
    private readonly edit?: object,
  ) {
    this.sessionId = row.sessionId;
  }

  get stream(): AsyncIterable<AgentStreamChunk> {
    return { [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }) };
  }

  get custom(): S | undefined {
    return undefined;
  }

  send(input: AgentInput): void {
    if (this.sent) throw new AgentError("FAILED_PRECONDITION", "input is closed: the invocation detached");
    this.sent = true;
    if (input.requestId !== this.row.requestId || inputFingerprint(input, this.edit) !== this.row.requestFingerprint) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `input.request_id "${this.row.requestId}" was already used for a different input of session "${this.sessionId}" (the detach of snapshot "${this.row.snapshotId}"); give every new input a new request ID and reuse one only to retry the same input`,
        { details: { field: "input.request_id", requestId: this.row.requestId, snapshotId: this.row.snapshotId } },
      );
    }
  }

  sendText(text: string, metadata?: Record<string, unknown>): void {
    this.send({ message: userText(text, metadata) });
  }

  detach(): void {
    this.send({ detach: true });
  }

  close(): void {}

  cancel(_error: AgentError): void {}

  output(): Promise<AgentOutput<S>> {
    return Promise.resolve({
      sessionId: this.sessionId,
      snapshotId: this.row.snapshotId,
      artifacts: [],
      finishReason: "detached",
    });
  }
}
