import type { SessionHead, SessionStore } from "../snapshot-store.js";
import type { WebhookOutbox } from "../webhook-outbox.js";

/**
 * What `copyStore` reads from the store it copies: every session's head, in
 * pages of session IDs ascending (`scanHeads`), every record of a session
 * (`listRecords`), and optionally the webhook outbox's events (`list`). Every
 * {@link SessionStore} with `scanHeads` is one; so is the reader of the
 * retired file store (`FileStoreArchive`), which can do nothing else.
 */
export interface CopySource extends Pick<SessionStore, "listRecords"> {
  /**
   * Up to `limit` heads of every owner and agent whose session ID sorts after
   * `afterSessionId`, ascending. Optional only because it is on
   * `SessionStore`: `copyStore` refuses a source without it.
   */
  scanHeads?(afterSessionId: string | undefined, limit: number): Promise<SessionHead[]>;
  /** The source's webhook outbox, when it keeps one. */
  webhookOutbox?(): Pick<WebhookOutbox, "list">;
  /** Releases what the source holds open. */
  close?(): Promise<void>;
}
