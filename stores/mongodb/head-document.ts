import type { Collection } from "mongodb";
import type { SessionHead } from "../snapshot-store.js";
import { isDuplicateKey } from "./mongo-errors.js";

/** How a session head is stored in `<prefix>heads`: `_id = sessionId`, the head's fields, `version` the CAS key. */
export interface HeadDocument extends Omit<SessionHead, "sessionId"> {
  _id: string;
}

/** Optional head fields: removed (`$unset`) when a write leaves them out. */
const OPTIONAL_FIELDS = ["lease", "waiters"] as const;

/** The head stored in a document. */
export function fromHeadDocument(doc: HeadDocument): SessionHead {
  const { _id, ...fields } = doc;
  const head: SessionHead = { sessionId: _id, ...fields };
  for (const key of OPTIONAL_FIELDS) if (head[key] == null) delete head[key];
  return head;
}

/** The head's fields as stored (no `_id`, no undefined values, which the driver would store as null). */
function storedFields(head: SessionHead): Omit<HeadDocument, "_id"> {
  const { sessionId: _sessionId, ...fields } = head;
  return JSON.parse(JSON.stringify(fields)) as Omit<HeadDocument, "_id">;
}

/**
 * Compare-and-set of a head: inserts it when `expectedVersion` is 0 (fails
 * when the session exists), otherwise replaces its fields where the stored
 * version equals `expectedVersion`. False on a version conflict.
 */
export async function writeHead(heads: Collection<HeadDocument>, head: SessionHead, expectedVersion: number): Promise<boolean> {
  const fields = storedFields(head);
  if (expectedVersion === 0) {
    try {
      await heads.insertOne({ _id: head.sessionId, ...fields });
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }
  const unset: Record<string, ""> = {};
  for (const key of OPTIONAL_FIELDS) if (!(key in fields)) unset[key] = "";
  const result = await heads.updateOne(
    { _id: head.sessionId, version: expectedVersion },
    Object.keys(unset).length > 0 ? { $set: fields, $unset: unset } : { $set: fields },
  );
  return result.matchedCount === 1;
}
