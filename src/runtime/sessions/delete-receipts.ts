import { AgentError } from "../../errors/agent-error.js";
import { DEFAULT_REQUEST_WINDOW, type RequestWindow } from "./request-ledger.js";

/** Most receipts one process keeps (the oldest go first). */
const MAX_RECEIPTS = 10_000;

interface Receipt {
  sessionId: string;
  deleted: boolean;
  at: number;
}

/**
 * What the DeleteSession calls that carried a request ID answered, per owner
 * and request ID, for `window.ttlMs` (at most {@link MAX_RECEIPTS} of them):
 * a retry of the call answers as the first did (`deleted: true` although the
 * session is gone by now). Kept in this process only: a retry that reaches
 * another instance deletes again, which is harmless and answers `false`.
 */
export class DeleteReceipts {
  private readonly receipts = new Map<string, Receipt>();

  constructor(private readonly window: RequestWindow = DEFAULT_REQUEST_WINDOW) {}

  /**
   * The answer of the first call with `requestId`, if this process
   * remembers it; INVALID_ARGUMENT when that call deleted another session.
   */
  answered(owner: string, requestId: string, sessionId: string, now = Date.now()): boolean | undefined {
    this.prune(now);
    const receipt = this.receipts.get(keyOf(owner, requestId));
    if (!receipt) return undefined;
    if (receipt.sessionId !== sessionId) {
      throw new AgentError(
        "INVALID_ARGUMENT",
        `request_id "${requestId}" was already used to delete another session; give every new call a new request ID and reuse one only to retry the same call`,
        { details: { field: "request_id", requestId } },
      );
    }
    return receipt.deleted;
  }

  /** Remembers what the call with `requestId` answered. */
  record(owner: string, requestId: string, sessionId: string, deleted: boolean, now = Date.now()): void {
    const key = keyOf(owner, requestId);
    this.receipts.delete(key);
    this.receipts.set(key, { sessionId, deleted, at: now });
    if (this.receipts.size > MAX_RECEIPTS) this.receipts.delete(this.receipts.keys().next().value!);
  }

  /** Drops the receipts older than the window (the map is in recording order). */
  private prune(now: number): void {
    for (const [key, receipt] of this.receipts) {
      if (receipt.at + this.window.ttlMs > now) return;
      this.receipts.delete(key);
    }
  }
}

function keyOf(owner: string, requestId: string): string {
  return `${owner}\0${requestId}`;
}
